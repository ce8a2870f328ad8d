// What settlement pays for each inference of a finalized escrow, from its signed diffs
// (devshard-protocol.md §5.6): the session is re-applied from nonce 1 with the devshard state machine
// and every record is taken as it is sealed (auto-seal, or the settlement drain that charges a
// Pending/Started record its reservation). The finalize document's host costs are the sum of exactly
// these, so the ledger records of the escrow can be brought to them: a record still at its
// reservation (its Finish was applied by the finalize itself) or refunded later by a validation vote.
import {
  applyDiff,
  defaultRecover,
  memoizeRecover,
  type SessionState,
  sessionFromEscrow,
  warmKeyLookupFromBindings,
} from '@gonka-gateway/devshard';
import { recordCost, type StoredDiff } from '@gonka-gateway/devshard/session';
import type { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';

/** Diffs applied between two yields to the event loop (one diff is about a millisecond of checks). */
const DIFFS_PER_TURN = 16;
const READ_CHUNK = 1_000n;

/** Inference id (= the nonce of its StartInference) → ngonka settlement pays for it. */
export async function settledInferenceCosts(
  store: PostgresSessionStore,
  escrowId: string,
): Promise<Map<bigint, bigint> | undefined> {
  const stored = await store.load(escrowId);
  if (!stored) return undefined;
  const diffs: StoredDiff[] = [];
  // Sealed records before a snapshot are only in the diffs the snapshot covers: read from nonce 1.
  const covered = stored.snapshot?.nonce ?? 0n;
  for (let from = 1n; from <= covered; from += READ_CHUNK) {
    const to = from + READ_CHUNK - 1n < covered ? from + READ_CHUNK - 1n : covered;
    diffs.push(...(await store.readDiffs(escrowId, from, to)));
  }
  diffs.push(...stored.diffs);
  const { record } = stored;
  let state: SessionState = sessionFromEscrow(record.escrow, {
    tag: record.tag,
    chainParams: record.chainParams,
  }).state;
  const ctx = {
    isWarmKey: warmKeyLookupFromBindings(diffs.flatMap((d) => d.warmKeysBound)),
    recover: memoizeRecover(defaultRecover, 8_192),
    replay: true,
  };
  const costs = new Map<bigint, bigint>();
  for (const [i, d] of diffs.entries()) {
    if (i % DIFFS_PER_TURN === DIFFS_PER_TURN - 1) await new Promise((r) => setImmediate(r));
    const applied = applyDiff(state, d.diff, ctx);
    for (const sealed of applied.effects.sealed) costs.set(sealed.id, recordCost(sealed.record).cost);
    state = applied.state;
  }
  return costs;
}
