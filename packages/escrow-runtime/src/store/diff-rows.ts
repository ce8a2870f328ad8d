// StoredDiff ↔ session_diffs / session_payloads rows. The txs are kept as the DiffJSON `txs` blob
// (DiffContent fields 1–2, devshard-protocol.md §4.3) and each tx keeps the exact bytes it was
// signed with (§10.1): on the way back the bytes come from the blob, never from a re-encoding.
import { readFields } from '@gonka-gateway/chain';
import {
  type DevshardTx,
  decodeTx,
  diffTxsBlob,
  type EncodedTx,
  type PayloadWire,
  type WarmKeyBinding,
} from '@gonka-gateway/devshard';
import type { StoredDiff } from '@gonka-gateway/devshard/session';

export interface DiffRow {
  nonce: string;
  txs: Buffer;
  user_sig: Buffer;
  post_state_root: Buffer | null;
  root: Buffer;
  warm_key_bindings: WarmKeyBinding[] | null;
}

export interface PayloadRow {
  inference_id: string;
  prompt: Buffer;
  model: string;
  input_length: string;
  max_tokens: string;
  started_at: string;
}

/** Joined diff + payload columns (payload columns null when pruned or never present). */
export type DiffWithPayloadRow = DiffRow & {
  [K in keyof Omit<PayloadRow, 'inference_id'>]: PayloadRow[K] | null;
};

export const toBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** A copy, so no caller can reach into a driver buffer (or alter what another caller got). */
export const toBytes = (b: Buffer | null | undefined) => (b ? new Uint8Array(b) : new Uint8Array(0));

/** The `txs` blob stored for a diff: exactly the DiffJSON txs a host receives. */
export function txsBlob(diff: StoredDiff): Uint8Array {
  // Usually the blob the diff's signature preimage was built on (diffTxsBlob): not encoded again.
  return diffTxsBlob(diff.nonce, diff.diff.txs);
}

/**
 * A stored tx whose message is decoded on first read: replay reads only the diffs after the
 * snapshot and host catch-up only the bytes, so decoding every tx of a long session up front
 * (most of a 20,000-diff load) would be spent on nothing. The bytes were decoded when received.
 */
function storedTx(bytes: Uint8Array): EncodedTx {
  let tx: DevshardTx | undefined;
  return {
    bytes,
    get tx() {
      tx ??= decodeTx(bytes).tx;
      return tx;
    },
  };
}

function txsFromBlob(blob: Uint8Array): EncodedTx[] {
  return readFields(blob).flatMap((f) =>
    f.field === 2 && f.wireType === 2 ? [storedTx(f.bytes.slice())] : [],
  );
}

export function payloadFromRow(r: Omit<PayloadRow, 'inference_id'>): PayloadWire {
  return {
    prompt: toBytes(r.prompt),
    model: r.model,
    inputLength: BigInt(r.input_length),
    maxTokens: BigInt(r.max_tokens),
    startedAt: BigInt(r.started_at),
  };
}

export function diffFromRow(r: DiffWithPayloadRow): StoredDiff {
  const nonce = BigInt(r.nonce);
  const payload =
    r.prompt !== null &&
    r.model !== null &&
    r.input_length !== null &&
    r.max_tokens !== null &&
    r.started_at !== null
      ? payloadFromRow({
          prompt: r.prompt,
          model: r.model,
          input_length: r.input_length,
          max_tokens: r.max_tokens,
          started_at: r.started_at,
        })
      : undefined;
  return {
    nonce,
    diff: {
      nonce,
      txs: txsFromBlob(toBytes(r.txs)),
      userSig: toBytes(r.user_sig),
      postStateRoot: toBytes(r.post_state_root),
    },
    root: toBytes(r.root),
    warmKeysBound: (r.warm_key_bindings ?? []).map((b) => ({
      slot: b.slot,
      coldAddress: b.coldAddress,
      address: b.address,
    })),
    ...(payload ? { payload } : {}),
  };
}
