// The escrow lifecycle of architecture §3, and the only place its transitions are listed. Each
// transition is one conditional `UPDATE … WHERE state = from`, so two controllers (or a retried job)
// racing on the same escrow move it at most once; a transition that finds the escrow already in its
// target state reports `already` (idempotent, restart-safe), anything else `refused` with the state
// it found. `creating` lives in chain_tx_commitments (the tx hash is stored before broadcast, and
// the escrow id exists only once the tx is included), so rows start at `active`. The state names
// themselves come from the schema's ESCROW_STATES (its CHECK constraint needs them, and shared
// cannot import the controller), so they are spelled once.
import { escrowTable, schema } from '@gonka-gateway/shared';
import type { Sql } from 'postgres';

/** States the transitions below use: all but `creating` (see above) and `failed`. */
export type LifecycleState = Exclude<schema.EscrowState, 'creating' | 'failed'>;
export const ESCROW_LIFECYCLE: readonly LifecycleState[] = schema.ESCROW_STATES.filter(
  (s): s is LifecycleState => s !== 'creating' && s !== 'failed',
);

export const TRANSITIONS = {
  /** Finalize step 1 (§2.6): owners stop routing to it and hand the lease back. */
  drain: { from: ['active'], to: 'draining' },
  /** The controller holds the lease and runs the finalize rounds. */
  finalize: { from: ['draining'], to: 'finalizing' },
  /** The finalize document is stored. */
  finalized: { from: ['finalizing'], to: 'finalized' },
  /** The settle tx hash is committed (chain_tx_commitments) before broadcast. */
  settle: { from: ['finalized'], to: 'settling' },
  /** The chain reports the escrow settled (also when settled elsewhere, e.g. by the CLI). */
  settled: { from: ['settling', 'finalized'], to: 'settled' },
  /** The settle tx failed on chain: back to finalized, so the operator can fix and retry. */
  settleFailed: { from: ['settling'], to: 'finalized' },
} as const satisfies Record<string, { from: readonly LifecycleState[]; to: LifecycleState }>;
export type TransitionName = keyof typeof TRANSITIONS;

export type TransitionResult =
  | { kind: 'moved' }
  | { kind: 'already' }
  | { kind: 'refused'; state: string }
  | { kind: 'missing' };

/** Moves `escrowId` along `name` if it is in one of the `from` states. */
export async function transition(
  sql: Sql,
  escrowId: bigint,
  name: TransitionName,
): Promise<TransitionResult> {
  const { from, to } = TRANSITIONS[name];
  if (await escrowTable.moveState(sql, escrowId, from, to)) return { kind: 'moved' };
  const row = await escrowTable.findEscrow(sql, escrowId);
  if (!row) return { kind: 'missing' };
  return row.state === to ? { kind: 'already' } : { kind: 'refused', state: row.state };
}

/**
 * The local routing flag (spec §2.1 `active`, §3.1 deactivate/import), independent of the lifecycle
 * state: false stops new chat to the escrow; its owner drains it on its next claim pass.
 */
export async function setRoutable(sql: Sql, escrowId: bigint, routable: boolean): Promise<boolean> {
  return escrowTable.setActive(sql, escrowId, routable);
}
