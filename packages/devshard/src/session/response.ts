// Processing what a host answered (devshard-protocol.md §7.2): compare its state_hash with our root
// at its nonce (divergence stops the session), keep its state signature for every slot of its address,
// advance host_sync_nonce, turn an executor receipt into MsgConfirmStart with the observed fields
// copied (§10 item 4), and queue mempool txs that pass the host-tx check.

import { SessionPhase } from '../hash/root-formula.js';
import type { ReceiptEvent } from '../json/wire.js';
import { type DecodedTx, decodeTx } from '../proto/devshard-tx.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { isHostStateSignature } from '../settlement/quorum.js';
import { type TxEnv, txEnv } from '../state/apply-context.js';
import { dedupKeys } from '../state/candidates.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkHostTx } from './host-tx-check.js';
import { type PendingEntry, storedPendingKey } from './pending-queue.js';
import type { SessionContext } from './session-context.js';
import { saveWrites } from './session-writes.js';
import { rootMismatchFault } from './stamp-check.js';

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * A host root we cannot match stops composition at once; it is a divergence only if we are still the
 * writer (a newer owner's diffs look exactly like this from the old owner's side, ownership.ts).
 */
function diverge(
  ctx: SessionContext,
  host: string,
  nonce: bigint,
  detail: string,
  expected?: Uint8Array,
  got?: Uint8Array,
): void {
  // A root that differs may be the unpinned §12 #1 layout (stamp-check.ts); an unknown nonce is not.
  // Either way the store first says whether we are still the owner (ownership.ts).
  ctx.guard.faultAfterCheck(
    expected
      ? rootMismatchFault(ctx.replica, host, nonce, detail)
      : new SessionError(SessionErrorCode.Diverged, `host ${host} at nonce ${nonce}: ${detail}`),
    () =>
      ctx.emit({
        type: 'divergence',
        host,
        nonce,
        ...(expected ? { expected } : {}),
        ...(got ? { got } : {}),
      }),
  );
}

/**
 * Decoded host txs by their exact bytes, per session, most recent last. Every host re-offers what
 * its mempool holds until a diff takes it, so most offers are bytes already decoded (and decoding
 * re-encodes once more to check canonical form, ~12 µs a tx). decodeTx is a pure function of the
 * bytes and its result is never mutated, so a hit changes no answer; the checks still run per offer.
 * A few dozen entries cover the txs hosts are still re-offering; more would only sit in the heap.
 */
const decodedByBytes = new WeakMap<SessionContext, Map<string, DecodedTx>>();
const DECODED_MEMO_MAX = 64;

function decodeOffered(ctx: SessionContext, bytes: Uint8Array): DecodedTx {
  let memo = decodedByBytes.get(ctx);
  if (!memo) {
    memo = new Map();
    decodedByBytes.set(ctx, memo);
  }
  const key = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  let decoded = memo.get(key);
  if (decoded === undefined) {
    decoded = decodeTx(bytes); // throws on malformed bytes: never memoized
    if (memo.size >= DECODED_MEMO_MAX) memo.delete(memo.keys().next().value as string);
    memo.set(key, decoded);
  }
  return decoded;
}

/** One intake's admissions: each offered tx checked, the admitted ones persisted together. */
class Intake {
  #env: TxEnv | undefined;
  readonly #added: PendingEntry[] = [];

  constructor(
    private readonly ctx: SessionContext,
    private readonly host: string,
  ) {}

  offer(decoded: DecodedTx): void {
    const ctx = this.ctx;
    if (ctx.pending.has(storedPendingKey(decoded))) return; // the usual case: every host re-offers
    this.#env ??= txEnv(ctx.replica.state.latestNonce + 1n, ctx.applyCtx);
    const { tx } = decoded;
    const reason = checkHostTx(ctx.replica.state, tx, this.#env);
    if (reason !== undefined) {
      // Stale copies of applied txs are routine; only suspicious rejections are reported.
      if (reason !== 'not_live' && reason !== 'wrong_status' && reason !== 'already_done') {
        ctx.emit({ type: 'host_tx_rejected', host: this.host, kind: tx.kind, reason });
      }
      return;
    }
    const entry = ctx.pending.add(decoded);
    if (entry) this.#added.push(entry);
  }

  /** Returns how many were queued. */
  persist(): number {
    this.ctx.writes.add(this.#added);
    return this.#added.length;
  }
}

/** Queues one tx built here from a host's answer (already checked like any host tx); true if queued. */
function queueOwnTx(ctx: SessionContext, host: string, tx: DecodedTx): boolean {
  const intake = new Intake(ctx, host);
  intake.offer(tx);
  return intake.persist() > 0;
}

/** Queues the host-proposed txs that may still apply (§7.1 kinds, host-tx-check.ts); returns how many. */
export function intakeHostTxs(ctx: SessionContext, host: string, txs: readonly Uint8Array[]): number {
  const intake = new Intake(ctx, host);
  for (const bytes of txs) {
    let decoded: DecodedTx;
    try {
      decoded = decodeOffered(ctx, bytes);
    } catch {
      ctx.emit({ type: 'host_tx_rejected', host, kind: 'unknown', reason: 'malformed' });
      continue;
    }
    intake.offer(decoded);
  }
  return intake.persist();
}

export interface ReceiptOutcome {
  /** A MsgConfirmStart for the inference of this send was queued. */
  readonly confirmQueued: boolean;
  /** The state-signature check, when the caller asked to run it later (`deferSignature`). */
  readonly verifySignature?: () => void;
}

/**
 * §7.2 for one receipt (SSE `devshard_receipt` or the legacy body). `inferenceNonce` is the nonce of
 * the inference this send carried a payload for; without it an executor receipt is ignored. With
 * `deferSignature` the state signature (a recovery, ~2 ms in pure JS, useful only for settlement) is
 * checked when the caller runs `verifySignature`, so it does not delay the first OpenAI chunk.
 */
export function processReceipt(
  ctx: SessionContext,
  host: string,
  r: ReceiptEvent,
  inferenceNonce?: bigint,
  options: { deferSignature?: boolean } = {},
): ReceiptOutcome {
  ctx.emit({ type: 'receipt', host, nonce: r.nonce });
  // Undefined also for a nonce older than the in-memory window: such a host is behind, nothing here
  // to compare with; catch-up brings it to a nonce whose root we hold.
  const root = ctx.replica.log.rootAt(r.nonce);
  if (root === undefined && r.nonce > ctx.replica.log.latestNonce) {
    // A nonce we never signed: another writer, or a host replaying someone else's log.
    diverge(
      ctx,
      host,
      r.nonce,
      `host is at nonce ${r.nonce}, ours is ${ctx.replica.log.latestNonce}`,
      undefined,
      r.stateHash,
    );
    return { confirmQueued: false };
  }
  if (root && r.stateHash) {
    if (!sameBytes(r.stateHash, root)) {
      diverge(ctx, host, r.nonce, 'state_hash differs from our root', root, r.stateHash);
      return { confirmQueued: false };
    }
    ctx.replica.rootConfirmed(r.nonce);
  }
  const sig = root ? r.stateSig : undefined;
  // §7.2 step 2 keeps every state_sig; its recovery runs where a signature is used:
  // at the final nonce — Settlement-phase receipts here, and signature-collection.ts re-checks every
  // stored one it loads. During serving nothing reads it, so it is kept unchecked: a recovery less
  // per response. A lying host is still caught (bad_state_signature) before any quorum counts it.
  const verifySignature =
    root && sig
      ? () =>
          void (ctx.replica.state.phase === SessionPhase.Settlement
            ? storeStateSignature(ctx, host, root, r.nonce, sig)
            : keepStateSignature(ctx, host, r.nonce, sig))
      : undefined;
  if (verifySignature && !options.deferSignature) verifySignature();
  ctx.hosts.advance(host, r.nonce);

  let confirmQueued = false;
  if (r.receipt && inferenceNonce !== undefined) {
    const confirm = txOf.confirmStart(
      newMsg.confirmStart({
        inferenceId: inferenceNonce,
        executorSig: r.receipt,
        confirmedAt: r.confirmedAt ?? 0n,
        // v5: both are covered by the executor's signature; dropping them breaks it (§10 item 4).
        observedHeight: r.observedHeight ?? 0n,
        observedBlockHash: r.observedBlockHash ?? new Uint8Array(0),
      }),
    );
    // Built and encoded here (canonically, codec.ts), so it is queued as is: decoding our own bytes
    // again would give the same message.
    confirmQueued =
      queueOwnTx(ctx, host, { bytes: confirm.bytes, tx: confirm.tx, canonical: true }) ||
      ctx.pending.has(dedupKeys.confirm(inferenceNonce));
  }
  if (r.mempool && r.mempool.length > 0) intakeHostTxs(ctx, host, r.mempool);
  return { confirmQueued, ...(verifySignature && options.deferSignature ? { verifySignature } : {}) };
}

/**
 * Persists a state signature for every slot of `host` at `nonce`, unchecked (see processReceipt).
 * While serving it waits for the session's next statement (session-writes.ts: only the final
 * nonce's signatures count, and §8.2 collection asks the hosts again); in Settlement it is written
 * at once, since a finalize resumed after a crash loads it (signature-collection.ts).
 */
function keepStateSignature(ctx: SessionContext, host: string, nonce: bigint, signature: Uint8Array): void {
  const slots = ctx.replica.state.group.slotsOf.get(host) ?? [];
  ctx.writes.signatures(
    nonce,
    slots.map((slotId) => ({ slotId, signature })),
  );
  if (ctx.replica.state.phase === SessionPhase.Settlement) void saveWrites(ctx);
}

/** Verifies a host's state signature (cold or warm key, §5.7) and stores it for each of its slots. */
export function storeStateSignature(
  ctx: SessionContext,
  host: string,
  root: Uint8Array,
  nonce: bigint,
  signature: Uint8Array,
): boolean {
  if (!isHostStateSignature(ctx.replica.state, host, root, nonce, signature, ctx.applyCtx)) {
    ctx.emit({ type: 'bad_state_signature', host, nonce });
    return false;
  }
  if (ctx.replica.state.phase === SessionPhase.Settlement && nonce === ctx.replica.state.latestNonce) {
    ctx.settlement.addSignature(host, signature);
  }
  keepStateSignature(ctx, host, nonce, signature);
  return true;
}
