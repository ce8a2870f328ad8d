// Final costs for usage rows written with the reservation (docs/keys-and-usage.md, "The usage
// ledger"). The response goes out before the host's Finish is applied (it rides in the next diff:
// the next request on the escrow or the idle flush), so the usage event usually carries
// cost_final=false. Rather than a follow-up event, the replica that owns the escrow reads its own
// session here: every few seconds it takes the non-final rows of the escrows it owns and sets the
// cost once the session has applied the Finish (or the timeout). The update is conditional on
// cost_final = false, so any replica, any number of times, gives the same row. A row whose record
// was sealed out of the live state before this ran, or whose escrow is no longer open anywhere,
// keeps its reservation and cost_final=false. Each row that became final is reported with its
// change (final − recorded), so a stored key's budget counter, charged the recorded cost when the
// request ended, follows the real cost (docs/keys-and-usage.md, "Budgets").
import type { InferenceCost } from '@gonka-gateway/devshard/session';
import type postgres from 'postgres';

export interface CostSource {
  owned(): ReadonlySet<bigint>;
  inferenceCost(escrowId: bigint, nonce: bigint): InferenceCost | undefined;
}

/** A row that became final: its key, when it was answered, and final cost − recorded cost (ngonka). */
export interface CostCorrection {
  readonly keyId: string;
  readonly atMs: number;
  readonly delta: bigint;
}

export interface CostReconcilerOptions {
  readonly sql: postgres.Sql;
  readonly sessions: CostSource;
  /** Default 2 s. */
  readonly everyMs?: number;
  /** Rows looked at per pass (default 500). */
  readonly batch?: number;
  readonly onError?: (error: Error) => void;
  readonly onCorrections?: (corrections: readonly CostCorrection[]) => Promise<void>;
}

export class CostReconciler {
  readonly #o: CostReconcilerOptions;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<number> | undefined;

  constructor(options: CostReconcilerOptions) {
    this.#o = options;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#pass) return;
      this.#pass = this.reconcile()
        .catch((error: Error) => {
          this.#o.onError?.(error);
          return 0;
        })
        .finally(() => {
          this.#pass = undefined;
        });
    }, this.#o.everyMs ?? 2000);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#pass;
  }

  /** One pass; returns how many rows became final. */
  async reconcile(): Promise<number> {
    const owned = [...this.#o.sessions.owned()].map(String);
    if (owned.length === 0) return 0;
    const { sql } = this.#o;
    // Lists travel as one JSON text parameter: the app's client (drizzle's) does not bind JS arrays.
    const rows = await sql<{ request_id: string; escrow_id: string; nonce: string }[]>`
      select request_id, escrow_id::text, nonce::text from usage_records
      where cost_final = false and nonce is not null and escrow_id in (select jsonb_array_elements_text(${JSON.stringify(owned)}::jsonb)::numeric)
      limit ${this.#o.batch ?? 500}`;
    const final: { request_id: string; cost: string }[] = [];
    for (const r of rows) {
      const c = this.#o.sessions.inferenceCost(BigInt(r.escrow_id), BigInt(r.nonce));
      if (c?.final) final.push({ request_id: r.request_id, cost: c.cost.toString() });
    }
    if (final.length === 0) return 0;
    // The CTE reads the rows as they were before this statement: the recorded cost.
    const done = await sql<{ key_id: string; at_ms: number; delta: string }[]>`
      with v as (select * from jsonb_to_recordset(${JSON.stringify(final)}::jsonb) as v(request_id text, cost numeric)),
           before as (select u.request_id, coalesce(u.cost, 0) as cost from usage_records u join v using (request_id))
      update usage_records u set cost = v.cost, cost_final = true, updated_at = now()
      from v join before using (request_id)
      where u.request_id = v.request_id and not u.cost_final
      returning u.key_id, (extract(epoch from u.at) * 1000)::float8 as at_ms, (v.cost - before.cost)::text as delta`;
    const corrections = done
      .map((r) => ({ keyId: r.key_id, atMs: Number(r.at_ms), delta: BigInt(r.delta) }))
      .filter((c) => c.delta !== 0n);
    if (corrections.length > 0) await this.#o.onCorrections?.(corrections);
    return done.length;
  }
}
