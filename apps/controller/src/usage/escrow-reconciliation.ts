// Ledger against settlement for one escrow (issue 14 §3): the hosts' cost in its finalize document
// (Σ host_stats[].cost, what MsgSettleDevshardEscrow pays the hosts before fees) against the sum of
// the usage records served on it. They match to the ngonka when every record's cost is final. When
// they do not, the records that can explain the difference are listed: those still at their
// reservation (settlement charged the Finish applied during finalize, or the reservation), and those
// whose request was retried (an earlier attempt's nonce may sit on this escrow while the record, and
// its cost, belong to the escrow that answered).
import type { Sql } from 'postgres';

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
  /** Empty when the totals match. */
  explaining_records: ReconciliationRecord[];
}

export type ReconciliationOutcome =
  | { kind: 'ok'; value: EscrowReconciliation }
  | { kind: 'unknown_escrow' }
  | { kind: 'not_finalized'; state: string };

export async function reconcileEscrow(sql: Sql, escrowId: string): Promise<ReconciliationOutcome> {
  const [escrow] = await sql<{ state: string }[]>`
    select state from escrows where escrow_id = ${escrowId}::numeric`;
  if (!escrow) return { kind: 'unknown_escrow' };
  const [doc] = await sql<{ nonce: string; fees: string; hosts: string }[]>`
    select f.nonce::text as nonce, f.fees::text as fees,
           coalesce((select sum((h->>'cost')::numeric) from jsonb_array_elements(f.document->'host_stats') h), 0)::text as hosts
      from finalize_documents f where f.escrow_id = ${escrowId}::numeric`;
  if (!doc) return { kind: 'not_finalized', state: escrow.state };
  const [ledger] = await sql<{ cost: string; n: string }[]>`
    select coalesce(sum(cost), 0)::text as cost, count(*)::text as n
      from usage_records where escrow_id = ${escrowId}::numeric`;
  const hosts = BigInt(doc.hosts);
  const recorded = BigInt(ledger!.cost);
  const matches = hosts === recorded;
  const explaining = matches
    ? []
    : await sql<ReconciliationRecord[]>`
        select request_id, nonce::text as nonce, nonces, cost::text as cost_ngonka, cost_final, status
          from usage_records
         where escrow_id = ${escrowId}::numeric and (not cost_final or position(',' in nonces) > 0)
         order by nonce limit 1000`;
  return {
    kind: 'ok',
    value: {
      escrow_id: escrowId,
      state: escrow.state,
      finalize_nonce: doc.nonce,
      hosts_cost_ngonka: hosts.toString(),
      fees_ngonka: doc.fees,
      ledger_cost_ngonka: recorded.toString(),
      ledger_requests: Number(ledger!.n),
      difference_ngonka: (hosts - recorded).toString(),
      matches,
      explaining_records: [...explaining],
    },
  };
}
