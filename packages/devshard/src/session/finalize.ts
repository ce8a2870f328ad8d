// Finalize (devshard-protocol.md §8.1): with no inference in flight, round 0 composes the pending txs
// plus MsgFinalizeRound at nonce F and sends it to host F mod N; rounds 1…N−1 and the last one at
// F + N each go to host nonce mod N, carrying whatever the previous answers queued; a host that does
// not answer is skipped (its diffs reach it by catch-up). At F + N the state is in Settlement; then
// signatures are collected (§8.2) and the finalize document is built and stored (§8.3). Every step
// resumes from the stored state: a session reloaded mid-finalize continues its rounds, one already in
// Settlement only collects signatures, and one with a stored document returns it unchanged.
import { SessionPhase } from '../hash/root-formula.js';
import { txOf } from '../proto/tx-builders.js';
import {
  type FinalizeResult,
  parseFinalizeDocument,
  settlementDocument,
  settlementDocumentJson,
} from '../settlement/document.js';
import { buildSettlementPayload } from '../settlement/payload.js';
import { slotSignatures } from '../settlement/quorum.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { type FinalizeGateOptions, passFinalizeGate } from './finalize-gate.js';
import { flushDiff } from './flush.js';
import type { SessionContext } from './session-context.js';
import {
  collectSettlementSignatures,
  deliverFinalToAll,
  type SignatureCollectionOptions,
} from './signature-collection.js';

export type FinalizeOptions = SignatureCollectionOptions & FinalizeGateOptions;

async function runFinalize(ctx: SessionContext, options: FinalizeOptions): Promise<FinalizeResult> {
  if (ctx.settlement.document !== undefined) return parseFinalizeDocument(ctx.settlement.document);
  await ctx.guard.assertUsable();
  if (ctx.inFlight > 0) {
    throw new SessionError(SessionErrorCode.InferenceInFlight, `${ctx.inFlight} inference(s) in flight`);
  }
  await passFinalizeGate(ctx, options); // completion_pending while an inference is open
  ctx.finalizing = true; // no new inference from here on (checked under the compose lock)
  if (ctx.replica.state.phase === SessionPhase.Active) {
    await flushDiff(ctx, [txOf.finalizeRound()], { force: true });
  }
  while (ctx.replica.state.phase === SessionPhase.Finalizing) await flushDiff(ctx, [], { force: true });

  await collectSettlementSignatures(ctx, options);
  const payload = buildSettlementPayload(ctx.replica.state);
  const signatures = slotSignatures(ctx.replica.state, ctx.settlement.signatures);
  const json = settlementDocumentJson(payload, signatures);
  // The signatures the document lists are stored before the document itself.
  await Promise.all(ctx.background);
  await ctx.guard.fencedWrite('saveFinalizeDocument', (token) =>
    ctx.store.saveFinalizeDocument(ctx.escrowId, json, token),
  );
  ctx.settlement.documentStored(json);
  // The document is durable; now every replica gets the final diffs, not only the quorum's.
  await deliverFinalToAll(ctx);
  return { document: settlementDocument(payload, signatures), json, payload, signatures };
}

/** Finalizes the session, or returns the document of an earlier finalize. */
export function finalizeSession(ctx: SessionContext, options: FinalizeOptions = {}): Promise<FinalizeResult> {
  return ctx.settlement.shared(() => runFinalize(ctx, options));
}
