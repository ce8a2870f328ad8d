// Ledger against settlement for one escrow (docs/keys-and-usage.md, "The usage ledger"): the hosts'
// cost in its finalize document (Σ host_stats[].cost, what MsgSettleDevshardEscrow pays the hosts
// before fees) against the sum of the usage records served on it. When they differ, or records are
// still at their reservation, the records are first brought to what settlement pays for their
// inference (settled-costs.ts replays the signed diffs): the Finish the finalize itself applied, a
// refund by a later validation vote. A difference that remains is reported with what explains it:
// records whose inference the diffs do not settle here (retried elsewhere), and settled inferences
// no record names (an attempt that was retried on another escrow, or a usage event that never arrived).
import type { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { escrowTable } from '@gonka-gateway/shared';
import type { Sql } from 'postgres';
import { settledInferenceCosts } from './settled-costs.js';

export interface ReconciliationRecord {
  request_id: string;
  nonce: string | null;
  nonces: string;
  cost_ngonka: string | null;
  cost_final: boolean;
  status: number;
}

export interface EscrowReconciliation {
  escrow_id: string;
  state: string;
  finalize_nonce: string;
  hosts_cost_ngonka: string;
  fees_ngonka: string;
  ledger_cost_ngonka: string;
  ledger_requests: number;
  difference_ngonka: string;
  matches: boolean;
  /** Records whose cost this call set from the diffs (they were at their reservation, or refunded since). */
  corrected_records: number;
  /** Empty when the totals match. */
  explaining_records: ReconciliationRecord[];
  /** Settled inferences with a cost that no record of this escrow names; empty when the totals match. */
  unrecorded_inferences: { inference_id: string; cost_ngonka: string }[];
}

/** A record whose cost this reconciliation changed: its key, answer time and new − old (ngonka). */
export interface CostCorrection {
  keyId: string;
  atMs: number;
  delta: bigint;
}

export type ReconciliationOutcome =
  | { kind: 'ok'; value: EscrowReconciliation; corrections: CostCorrection[] }
  | { kind: 'unknown_escrow' }
  | { kind: 'not_finalized'; state: string };

export async function reconcileEscrow(
  sql: Sql,
  store: PostgresSessionStore,
  escrowId: string,
): Promise<ReconciliationOutcome> {
  const escrow = /^\d+$/.test(escrowId) ? await escrowTable.findEscrow(sql, BigInt(escrowId)) : undefined;
  if (!escrow) return { kind: 'unknown_escrow' };
  const [doc] = await sql<{ nonce: string; fees: string; hosts: string }[]>`
    select f.nonce::text as nonce, f.fees::text as fees,
           coalesce((select sum((h->>'cost')::numeric) from jsonb_array_elements(f.document->'host_stats') h), 0)::text as hosts
      from finalize_documents f where f.escrow_id = ${escrowId}::numeric`;
  if (!doc) return { kind: 'not_finalized', state: escrow.state };
  const totals = async () => {
    const [row] = await sql<{ cost: string; n: string; open: string }[]>`
      select coalesce(sum(cost), 0)::text as cost, count(*)::text as n,
             count(*) filter (where not cost_final)::text as open
        from usage_records where escrow_id = ${escrowId}::numeric`;
    return { cost: BigInt(row!.cost), n: Number(row!.n), open: Number(row!.open) };
  };
  const hosts = BigInt(doc.hosts);
  let ledger = await totals();
  let corrected = 0;
  const corrections: CostCorrection[] = [];
  let settled: Map<bigint, bigint> | undefined;
  if (ledger.cost !== hosts || ledger.open > 0) {
    settled = await settledInferenceCosts(store, escrowId);
    const list = [...(settled ?? [])].map(([id, cost]) => ({ nonce: id.toString(), cost: cost.toString() }));
    if (list.length > 0) {
      // The CTE sees the rows as they were: the cost each record had (what budgets were charged).
      const done = await sql<{ key_id: string; at_ms: number; delta: string }[]>`
        with v as (select * from jsonb_to_recordset(${JSON.stringify(list)}::text::jsonb) as v(nonce numeric, cost numeric)),
             before as (select request_id, coalesce(cost, 0) as cost from usage_records where escrow_id = ${escrowId}::numeric)
        update usage_records u set cost = v.cost, cost_final = true, updated_at = now()
          from v, before
         where u.escrow_id = ${escrowId}::numeric and u.nonce = v.nonce and before.request_id = u.request_id
           and (not u.cost_final or u.cost is distinct from v.cost)
        returning u.key_id, (extract(epoch from u.at) * 1000)::float8 as at_ms, (v.cost - before.cost)::text as delta`;
      corrected = done.length;
      for (const r of done) {
        const delta = BigInt(r.delta);
        if (delta !== 0n) corrections.push({ keyId: r.key_id, atMs: Number(r.at_ms), delta });
      }
      ledger = await totals();
    }
  }
  const recorded = ledger.cost;
  const matches = hosts === recorded;
  const explaining = matches
    ? []
    : await sql<ReconciliationRecord[]>`
        select request_id, nonce::text as nonce, nonces, cost::text as cost_ngonka, cost_final, status
          from usage_records
         where escrow_id = ${escrowId}::numeric and (not cost_final or position(',' in nonces) > 0)
         order by nonce limit 1000`;
  const unrecorded: { inference_id: string; cost_ngonka: string }[] = [];
  if (!matches && settled) {
    const named = new Set(
      (
        await sql<{ nonce: string }[]>`
          select nonce::text as nonce from usage_records where escrow_id = ${escrowId}::numeric and nonce is not null`
      ).map((r) => r.nonce),
    );
    for (const [id, cost] of settled) {
      if (cost > 0n && !named.has(id.toString()) && unrecorded.length < 1000) {
        unrecorded.push({ inference_id: id.toString(), cost_ngonka: cost.toString() });
      }
    }
  }
  return {
    kind: 'ok',
    corrections,
    value: {
      escrow_id: escrowId,
      state: escrow.state,
      finalize_nonce: doc.nonce,
      hosts_cost_ngonka: hosts.toString(),
      fees_ngonka: doc.fees,
      ledger_cost_ngonka: recorded.toString(),
      ledger_requests: ledger.n,
      difference_ngonka: (hosts - recorded).toString(),
      matches,
      corrected_records: corrected,
      explaining_records: [...explaining],
      unrecorded_inferences: unrecorded,
    },
  };
}
