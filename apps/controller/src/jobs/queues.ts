// BullMQ queues of the controller (architecture §1: every slow or money-moving action is a job).
// Queue names and job ids live here only. Job ids are deterministic — derived from what the job
// is about — so a retry, a double click or two controllers adding the same work enqueue it once
// (BullMQ ignores an add whose id exists). Every queue uses the configured Redis key prefix
// (redisKeys(prefix).bullPrefix), so gateways and test files sharing one Redis never meet.
export const QUEUE_NAMES = {
  /** Upkeep: ask the chain about every commitment whose outcome is not final (architecture §3). */
  reconcileCommitments: 'reconcile-commitments',
  /** On demand: commitment → broadcast → poll → register of one create (jobs/create-escrow-job.ts). */
  createEscrow: 'create-escrow',
  /**
   * MsgSettleDevshardEscrow of one escrow (escrow/settle.ts): the parent of a flow whose child, in
   * `finalize`, finalizes the escrow first.
   */
  settle: 'settle',
  /** The settle flow's child: the settle pre-checks, then the finalize (escrow/settle.ts finalizeForSettle). */
  finalize: 'finalize',
  /** Upkeep: the balance / nonce check of every routed escrow (upkeep/depletion-check.ts). */
  depletionCheck: 'depletion-check',
  /** Upkeep: delete usage records past the retention (usage/usage-retention.ts). */
  usagePurge: 'usage-purge',
  /** Upkeep: delete rotation markers past their retention (upkeep/rotation-events-purge.ts). */
  rotationEventsPurge: 'rotation-events-purge',
  /** Upkeep: the rotation tick (upkeep/rotation-tick.ts, spec §3.4). */
  rotationTick: 'rotation-tick',
  /** Upkeep: epoch, phase and PoC state published to Redis for the proxies (upkeep/chain-phase.ts). */
  chainPhase: 'chain-phase',
} as const;
export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

/** BullMQ refuses ':' in custom ids (it separates key parts), so ids use '-'. */
export const JOB_IDS = {
  /** The repeating reconciliation pass has one scheduler id. */
  reconcileSchedule: 'reconcile-commitments-every',
  depletionSchedule: 'depletion-check-every',
  /** The pass a controller runs each time it takes the lead (crash recovery, architecture §3). */
  reconcileOnLead: (controllerId: string, lead: number) => `reconcile-on-lead-${controllerId}-${lead}`,
  usagePurgeSchedule: 'usage-purge-every',
  rotationEventsPurgeSchedule: 'rotation-events-purge-every',
  rotationSchedule: 'rotation-tick-every',
  chainPhaseSchedule: 'chain-phase-every',
  /** A tick right after a settings change (revision), so enabling rotation acts without waiting. */
  rotationKick: (revision: string) => `rotation-tick-settings-${revision}`,
  /** A one-off reconciliation of one tx (after a create or settle answered `unknown`). */
  reconcileTx: (txHash: string) => `reconcile-${txHash.toUpperCase()}`,
  /**
   * One create per request key (escrow/create.ts createRequestKey: SHA-256 hex of the
   * Idempotency-Key, or `request-<uuid>`): a double click or a second controller enqueues it once.
   */
  createEscrow: (requestKey: string) => `create-escrow-${requestKey}`,
  /** One settle per escrow: a double click or a second controller enqueues it once. */
  settle: (escrowId: bigint) => `settle-${escrowId}`,
  /** The finalize child of the escrow's settle flow: one per escrow as well. */
  finalize: (escrowId: bigint) => `finalize-${escrowId}`,
} as const;

/** Retries with exponential backoff; a job that keeps failing stays visible as failed. */
export const DEFAULT_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: { age: 24 * 3600, count: 1_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;

/**
 * Worker locks: a job whose controller died (SIGKILL, OOM) is seen as stalled and run again by a
 * live worker once its lock lapsed — within about lockDuration + stalledInterval (2 × 15 s by
 * default, GATEWAY_JOB_LOCK_MS; BullMQ's default is a minute). A live worker renews its lock every
 * lockDuration / 2.
 */
export function workerLocks(lockMs = 15_000): { lockDuration: number; stalledInterval: number } {
  return { lockDuration: lockMs, stalledInterval: lockMs };
}

/** About every 30 s, like the other upkeep passes (spec §8). */
export const RECONCILE_EVERY_MS = 30_000;
/** Spec §3.1, §8: about every 30 s. */
export const DEPLETION_CHECK_EVERY_MS = 30_000;
/** Retention is counted in days: hourly is prompt enough. */
export const USAGE_PURGE_EVERY_MS = 3_600_000;
/** The retention is counted in days (30): hourly is prompt enough. */
export const ROTATION_EVENTS_PURGE_EVERY_MS = 3_600_000;
/** Spec §3.4, §8: about every 15 s (GATEWAY_ROTATION_TICK_MS). */
export const ROTATION_TICK_EVERY_MS = 15_000;
