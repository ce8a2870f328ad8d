// chain_tx_commitments (architecture §3, chain-and-network.md §2.4): a tx's hash and exact bytes are
// stored BEFORE it is broadcast, so a crash or a lost answer is resolved by asking the chain about
// that hash, never by signing and sending a new tx. `business_key` ties a tx to the request or job
// that wanted it (one Idempotency-Key, one settle of one escrow), so at most one live tx exists per
// key; callers serialise per key with an advisory lock (withBusinessLock).
import { createHash } from 'node:crypto';
import { type ChainClient, lookupTx, type PreparedTx, type TxOutcome } from '@gonka-gateway/chain';
import type { ReservedSql, Sql } from 'postgres';

export type CommitmentKind = 'create_escrow' | 'settle_escrow';
export type CommitmentStatus = 'prepared' | 'broadcast' | 'included' | 'failed' | 'unknown' | 'expired';

/** A tx that could still land, or landed: another must not be sent for the same business key. */
export const LIVE_STATUSES: readonly CommitmentStatus[] = ['prepared', 'broadcast', 'unknown', 'included'];

/** Past the tx's timeout_timestamp plus this margin, the chain can no longer include it (§2.4). */
export const EXPIRY_MARGIN_MS = 60_000;

export interface Commitment {
  txHash: string;
  kind: CommitmentKind;
  businessKey: string;
  escrowId: bigint | null;
  txBytes: Uint8Array;
  status: CommitmentStatus;
  expiresAt: Date;
  code: number | null;
  rawLog: string | null;
  result: Record<string, unknown> | null;
}

interface Row {
  tx_hash: string;
  kind: CommitmentKind;
  business_key: string;
  escrow_id: string | null;
  tx_bytes: Buffer;
  status: CommitmentStatus;
  expires_at: Date;
  code: number | null;
  raw_log: string | null;
  result: Record<string, unknown> | null;
}

const fromRow = (r: Row): Commitment => ({
  txHash: r.tx_hash,
  kind: r.kind,
  businessKey: r.business_key,
  escrowId: r.escrow_id === null ? null : BigInt(r.escrow_id),
  txBytes: new Uint8Array(r.tx_bytes),
  status: r.status,
  expiresAt: r.expires_at,
  code: r.code,
  rawLog: r.raw_log,
  result: r.result,
});

/** The newest live commitment of a business key, if any. */
export async function liveCommitment(
  sql: Sql | ReservedSql,
  businessKey: string,
): Promise<Commitment | undefined> {
  const [row] = await sql<Row[]>`
    select tx_hash, kind, business_key, escrow_id::text as escrow_id, tx_bytes, status, expires_at, code,
           raw_log, result
      from chain_tx_commitments
     where business_key = ${businessKey} and status in ${sql(LIVE_STATUSES as CommitmentStatus[])}
     order by created_at desc limit 1`;
  return row ? fromRow(row) : undefined;
}

export async function recordCommitment(
  sql: Sql | ReservedSql,
  input: { kind: CommitmentKind; businessKey: string; escrowId?: bigint; tx: PreparedTx; result?: unknown },
): Promise<void> {
  const expiresAt = new Date(Number(input.tx.timeoutTimestampNs / 1_000_000n) + EXPIRY_MARGIN_MS);
  await sql`
    insert into chain_tx_commitments (tx_hash, kind, business_key, escrow_id, tx_bytes, status, expires_at, result)
    values (${input.tx.txHash.toUpperCase()}, ${input.kind}, ${input.businessKey},
            ${input.escrowId === undefined ? null : input.escrowId.toString()}, ${Buffer.from(input.tx.txBytes)},
            'prepared', ${expiresAt.toISOString()}::timestamptz, ${input.result === undefined ? null : sql.json(input.result as never)})`;
}

export async function markBroadcast(sql: Sql | ReservedSql, txHash: string): Promise<void> {
  await sql`update chain_tx_commitments set status = 'broadcast', updated_at = now()
             where tx_hash = ${txHash.toUpperCase()} and status = 'prepared'`;
}

/** Stores what the chain said; `included` and `failed` are final and never overwritten. */
export async function recordOutcome(
  sql: Sql | ReservedSql,
  outcome: TxOutcome,
  extra: { escrowId?: bigint; result?: Record<string, unknown> } = {},
): Promise<void> {
  const hash = outcome.txHash.toUpperCase();
  const merge = extra.result ? sql.json(extra.result as never) : null;
  if (outcome.status === 'included') {
    await sql`update chain_tx_commitments
                 set status = 'included', height = ${outcome.height.toString()}, code = 0,
                     escrow_id = coalesce(${extra.escrowId?.toString() ?? null}::numeric, escrow_id),
                     result = coalesce(result, '{}'::jsonb) || coalesce(${merge}::jsonb, '{}'::jsonb),
                     updated_at = now()
               where tx_hash = ${hash} and status not in ('included', 'failed')`;
    // A tx a reconciliation recorded first (without knowing the escrow) still gets its escrow id.
    if (extra.escrowId !== undefined) {
      await sql`update chain_tx_commitments set escrow_id = ${extra.escrowId.toString()}, updated_at = now()
                 where tx_hash = ${hash} and escrow_id is null`;
    }
  } else if (outcome.status === 'failed') {
    await sql`update chain_tx_commitments
                 set status = 'failed', code = ${outcome.code}, codespace = ${outcome.codespace},
                     raw_log = ${outcome.rawLog}, height = ${outcome.height?.toString() ?? null}, updated_at = now()
               where tx_hash = ${hash} and status not in ('included', 'failed')`;
  } else {
    await sql`update chain_tx_commitments set status = 'unknown', raw_log = ${outcome.reason}, updated_at = now()
               where tx_hash = ${hash} and status not in ('included', 'failed')`;
  }
}

export async function mergeResult(
  sql: Sql | ReservedSql,
  txHash: string,
  result: Record<string, unknown>,
): Promise<void> {
  await sql`update chain_tx_commitments set result = coalesce(result, '{}'::jsonb) || ${sql.json(result as never)},
                   updated_at = now()
             where tx_hash = ${txHash.toUpperCase()}`;
}

export async function markExpired(sql: Sql | ReservedSql, txHash: string): Promise<void> {
  await sql`update chain_tx_commitments set status = 'expired', updated_at = now()
             where tx_hash = ${txHash.toUpperCase()} and status in ('prepared', 'broadcast', 'unknown')`;
}

export type Reconciled =
  | { kind: 'included' | 'failed'; outcome: TxOutcome }
  | { kind: 'pending' }
  | { kind: 'expired' }
  | { kind: 'unreachable'; reason: string };

/**
 * Asks the chain about a commitment that was (maybe) broadcast: found → its outcome (recorded);
 * not found and past expiry → expired (it can never land, a new tx is safe); not found before
 * expiry → pending (the caller may re-send the SAME bytes, which cannot execute twice).
 */
export async function reconcileCommitment(
  sql: Sql | ReservedSql,
  client: ChainClient,
  commitment: Commitment,
  now: () => number = Date.now,
): Promise<Reconciled> {
  const lookup = await lookupTx(client, commitment.txHash);
  if (lookup.kind === 'found') {
    await recordOutcome(sql, lookup.outcome);
    return { kind: lookup.outcome.status, outcome: lookup.outcome };
  }
  if (lookup.kind === 'error') return { kind: 'unreachable', reason: lookup.error.message };
  if (now() > commitment.expiresAt.getTime()) {
    await markExpired(sql, commitment.txHash);
    return { kind: 'expired' };
  }
  return { kind: 'pending' };
}

/**
 * At most this many keyed operations hold a reserved connection at once: each holds one for its
 * whole run (broadcast and poll included) while its queries use others from the pool, so the pool
 * (app.ts: 10) must always keep connections free for them.
 */
export const MAX_LOCKED_OPERATIONS = 4;
let lockedOperations = 0;
const waitingForSlot: Array<() => void> = [];

async function takeSlot(): Promise<void> {
  if (lockedOperations < MAX_LOCKED_OPERATIONS) {
    lockedOperations++;
    return;
  }
  await new Promise<void>((resolve) => waitingForSlot.push(resolve));
}

function giveSlot(): void {
  const next = waitingForSlot.shift();
  if (next) next();
  else lockedOperations--;
}

/**
 * Runs `work` holding a session advisory lock on the business key, on one reserved connection:
 * two requests with the same Idempotency-Key (or two workers on one settle) run one after the other,
 * and the second sees what the first committed. Never nest two of these (a slot each).
 */
export async function withBusinessLock<T>(sql: Sql, businessKey: string, work: () => Promise<T>): Promise<T> {
  const lockId = createHash('sha256').update(businessKey).digest().readBigInt64BE(0);
  await takeSlot();
  try {
    const conn = await sql.reserve();
    try {
      await conn`select pg_advisory_lock(${lockId.toString()}::bigint)`;
      try {
        return await work();
      } finally {
        await conn`select pg_advisory_unlock(${lockId.toString()}::bigint)`;
      }
    } finally {
      conn.release();
    }
  } finally {
    giveSlot();
  }
}

/** When each escrow's settle tx was recorded included (ms since the epoch), by escrow id. */
export async function settlesIncludedAt(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ escrow_id: string; at: Date }[]>`
    select escrow_id::text as escrow_id, max(updated_at) as at from chain_tx_commitments
     where kind = 'settle_escrow' and status = 'included' and escrow_id is not null
     group by escrow_id`;
  return new Map(rows.map((r) => [Number(r.escrow_id), new Date(r.at).getTime()]));
}
