// Processing what a host answered (devshard-protocol.md §7.2): compare its state_hash with our root
// at its nonce (divergence stops the session), keep its state signature for every slot of its address,
// advance host_sync_nonce, turn an executor receipt into MsgConfirmStart with the observed fields
// copied (§10 item 4), and queue mempool txs that pass the host-tx check.

import { SessionPhase } from '../hash/root-formula.js';
import type { ReceiptEvent } from '../json/wire.js';
import { decodeTx } from '../proto/devshard-tx.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { isHostStateSignature } from '../settlement/quorum.js';
import { txEnv } from '../state/apply-context.js';
import { dedupKeys } from '../state/candidates.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkHostTx } from './host-tx-check.js';
import { faultAfterCheck } from './ownership.js';
import { type PendingEntry, storedPendingKey } from './pending-queue.js';
import { persistAdded } from './pending-writes.js';
import { hostSyncOf, inBackground, type SessionContext } from './session-context.js';
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
  faultAfterCheck(
    ctx,
    expected
      ? rootMismatchFault(ctx, host, nonce, detail)
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

/** host_sync_nonce[address] = max(current, nonce), persisted off the request path. */
export function advanceHost(ctx: SessionContext, address: string, nonce: bigint): void {
  if (nonce <= hostSyncOf(ctx, address)) return;
  ctx.hostSync.set(address, nonce);
  inBackground(ctx, 'saveHostProgress', () => ctx.store.saveHostProgress(ctx.escrowId, address, nonce));
}

/** Queues the host-proposed txs that may still apply (§7.1 kinds, host-tx-check.ts); returns how many. */
export function intakeHostTxs(ctx: SessionContext, host: string, txs: readonly Uint8Array[]): number {
  const env = txEnv(ctx.state.latestNonce + 1n, ctx.applyCtx);
  const added: PendingEntry[] = [];
  for (const bytes of txs) {
    let decoded: ReturnType<typeof decodeTx>;
    try {
      decoded = decodeTx(bytes);
    } catch {
      ctx.emit({ type: 'host_tx_rejected', host, kind: 'unknown', reason: 'malformed' });
      continue;
    }
    const { tx } = decoded;
    if (ctx.pending.has(storedPendingKey(decoded))) continue; // the usual case: every host re-offers
    const reason = checkHostTx(ctx.state, tx, env);
    if (reason !== undefined) {
      // Stale copies of applied txs are routine; only suspicious rejections are reported.
      if (reason !== 'not_live' && reason !== 'wrong_status' && reason !== 'already_done') {
        ctx.emit({ type: 'host_tx_rejected', host, kind: tx.kind, reason });
      }
      continue;
    }
    const entry = ctx.pending.add(decoded);
    if (entry) added.push(entry);
  }
  persistAdded(ctx, added);
  return added.length;
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
  const root = ctx.log.rootAt(r.nonce);
  if (root === undefined && r.nonce > ctx.log.latestNonce) {
    // A nonce we never signed: another writer, or a host replaying someone else's log.
    diverge(
      ctx,
      host,
      r.nonce,
      `host is at nonce ${r.nonce}, ours is ${ctx.log.latestNonce}`,
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
    const first = ctx.stamps.firstStampNonce;
    if (first !== undefined && r.nonce >= first) ctx.stamps.calibrated = true;
  }
  const sig = root ? r.stateSig : undefined;
  // §7.2 step 2 keeps every state_sig; its recovery runs where a signature is used (issue 10 §4):
  // at the final nonce — Settlement-phase receipts here, and signature-collection.ts re-checks every
  // stored one it loads. During serving nothing reads it, so it is kept unchecked: a recovery less
  // per response. A lying host is still caught (bad_state_signature) before any quorum counts it.
  const verifySignature =
    root && sig
      ? () =>
          void (ctx.state.phase === SessionPhase.Settlement
            ? storeStateSignature(ctx, host, root, r.nonce, sig)
            : keepStateSignature(ctx, host, r.nonce, sig))
      : undefined;
  if (verifySignature && !options.deferSignature) verifySignature();
  advanceHost(ctx, host, r.nonce);

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
    confirmQueued =
      intakeHostTxs(ctx, host, [confirm.bytes]) > 0 || ctx.pending.has(dedupKeys.confirm(inferenceNonce));
  }
  if (r.mempool && r.mempool.length > 0) intakeHostTxs(ctx, host, r.mempool);
  return { confirmQueued, ...(verifySignature && options.deferSignature ? { verifySignature } : {}) };
}

/** Verifies a host's state signature (cold or warm key, §5.7) and stores it for each of its slots. */
/** Persists a state signature for every slot of `host` at `nonce`, unchecked (see processReceipt). */
function keepStateSignature(ctx: SessionContext, host: string, nonce: bigint, signature: Uint8Array): void {
  const slots = ctx.state.group.slotsOf.get(host) ?? [];
  const entries = slots.map((slotId) => ({ slotId, signature }));
  inBackground(ctx, 'saveSignatures', () => ctx.store.saveSignatures(ctx.escrowId, nonce, entries));
}

export function storeStateSignature(
  ctx: SessionContext,
  host: string,
  root: Uint8Array,
  nonce: bigint,
  signature: Uint8Array,
): boolean {
  if (!isHostStateSignature(ctx.state, host, root, nonce, signature, ctx.applyCtx)) {
    ctx.emit({ type: 'bad_state_signature', host, nonce });
    return false;
  }
  if (ctx.state.phase === SessionPhase.Settlement && nonce === ctx.state.latestNonce) {
    ctx.settlementSigs.set(host, signature);
  }
  keepStateSignature(ctx, host, nonce, signature);
  return true;
}
