// DiffContent{1 nonce, 2 txs, 3 escrow_id, 4 post_state_root} (devshard-protocol.md §3.1): the
// preimage of the diff user signature (§2.4) and, with fields 1–2 only, the `txs` blob of DiffJSON
// (§4.3). Transactions are spliced as their kept bytes, never re-encoded.
import { ProtoWriter, readFields } from '@gonka-gateway/chain';
import { DevshardError, DevshardErrorCode } from '../errors.js';
import { type DecodedTx, decodeTx, type EncodedTx } from './devshard-tx.js';

export interface DiffContentInput {
  readonly nonce: bigint;
  readonly txs: readonly EncodedTx[];
  /** Omitted (field 3) in the DiffJSON `txs` blob. */
  readonly escrowId?: string;
  /** Omitted when empty or absent. */
  readonly postStateRoot?: Uint8Array;
}

export function encodeDiffContent(input: DiffContentInput): Uint8Array {
  const w = new ProtoWriter().uint64(1, input.nonce);
  for (const tx of input.txs) w.message(2, tx.bytes);
  return w
    .string(3, input.escrowId ?? '')
    .bytes(4, input.postStateRoot)
    .finish();
}

/**
 * The DiffJSON `txs` blob (fields 1–2) of the last few diffs. A composed diff needs it three times:
 * as the head of its signature preimage (signing/diff.ts), in its write-ahead row (escrow-runtime's
 * session_diffs.txs) and on the wire (json/wire.ts). Keyed by the txs list and checked against the
 * nonce and every tx's byte array by identity, so a list changed since (or an equal list built
 * anew) is encoded again; tx bytes are never written in place (§10.1 keeps them).
 */
const RECENT_BLOBS = 16;
const blobOfTxs = new Map<
  readonly EncodedTx[],
  { readonly nonce: bigint; readonly txBytes: readonly Uint8Array[]; readonly blob: Uint8Array }
>();

/** `encodeDiffContent({ nonce, txs })`, remembered for the same txs (see blobOfTxs). */
export function diffTxsBlob(nonce: bigint, txs: readonly EncodedTx[]): Uint8Array {
  const hit = blobOfTxs.get(txs);
  if (
    hit !== undefined &&
    hit.nonce === nonce &&
    hit.txBytes.length === txs.length &&
    hit.txBytes.every((b, i) => b === txs[i]!.bytes)
  ) {
    return hit.blob;
  }
  const blob = encodeDiffContent({ nonce, txs });
  if (hit === undefined && blobOfTxs.size >= RECENT_BLOBS) {
    blobOfTxs.delete(blobOfTxs.keys().next().value as readonly EncodedTx[]);
  }
  blobOfTxs.set(txs, { nonce, txBytes: txs.map((t) => t.bytes), blob });
  return blob;
}

export interface DecodedDiffTxs {
  /** The nonce inside the blob. Go hosts ignore it and use DiffJSON.nonce. */
  readonly nonce: bigint;
  readonly txs: readonly DecodedTx[];
  /** True when the blob is exactly the canonical DiffContent{nonce, txs} encoding. */
  readonly canonical: boolean;
}

/** Reads the DiffJSON `txs` blob: a DiffContent of which only fields 1 and 2 are used. */
export function decodeDiffTxs(blob: Uint8Array): DecodedDiffTxs {
  let fields: ReturnType<typeof readFields>;
  try {
    fields = readFields(blob);
  } catch (error) {
    throw new DevshardError(DevshardErrorCode.Malformed, `DiffContent: ${(error as Error).message}`);
  }
  let nonce = 0n;
  const txs: DecodedTx[] = [];
  for (const f of fields) {
    if (f.field === 1 && f.wireType === 0) nonce = f.varint;
    else if (f.field === 2 && f.wireType === 2) txs.push(decodeTx(f.bytes));
  }
  const reencoded = encodeDiffContent({ nonce, txs });
  let canonical = reencoded.length === blob.length && txs.every((t) => t.canonical);
  for (let i = 0; canonical && i < blob.length; i++) canonical = reencoded[i] === blob[i];
  return { nonce, txs, canonical };
}
