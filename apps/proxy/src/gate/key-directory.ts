// The stored API keys every replica checks callers against (issue 14, spec §5.1): digests and
// limits of the unrevoked keys, the ledger's spend of each budgeted key in its current period (it
// seeds a Redis spend counter that does not exist yet: a new period, or Redis lost its data) and
// each model's highest token price (what a request's budget reservation is priced at). Re-read with
// the settings (every second, and at once on the controller's change message), so a created,
// changed, rotated or revoked key takes effect on every replica within a second. A key not found is
// answered after a read that started after it arrived (reads forced this way start at most every
// 250 ms, shared by every miss meanwhile), so a key just created works on its first request and a
// flood of wrong keys costs at most four reads a second.
import { performance } from 'node:perf_hooks';
import { type BudgetPeriod, budgetPeriodOf, type Database } from '@gonka-gateway/shared';

export interface StoredKey {
  readonly id: string;
  /** SHA-256 of the key; never the key. */
  readonly hash: Buffer;
  /** Models the key may use; null = any the access mode allows. */
  readonly models: ReadonlySet<string> | null;
  readonly budget: bigint | null;
  readonly period: BudgetPeriod;
  /** 0 = no limit. */
  readonly rpm: number;
  readonly tpm: number;
  readonly maxConcurrent: number;
  /** Unix ms, or null. */
  readonly expiresAtMs: number | null;
  /** The ledger's spend in the current period when last read (budgeted keys only). */
  readonly ledgerSpend: bigint;
}

export interface KeyDirectoryOptions {
  readonly database: Pick<Database, 'sql'>;
  /** Minimum time between two reads forced by an unknown key (default 250 ms). */
  readonly missReloadMs?: number;
}

interface KeyRow {
  id: string;
  key_hash: Buffer;
  models: string[] | null;
  budget: string | null;
  period: BudgetPeriod | null;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  expires_ms: number | null;
}

export class KeyDirectory {
  readonly #o: KeyDirectoryOptions;
  #keys: readonly StoredKey[] = [];
  #prices = new Map<string, bigint>();
  #loading: Promise<void> | undefined;
  /** When the newest completed read started (what it can have seen). */
  #readStartedAt = 0;
  #lastForcedAt = 0;

  constructor(options: KeyDirectoryOptions) {
    this.#o = options;
  }

  get keys(): readonly StoredKey[] {
    return this.#keys;
  }

  /** ngonka per token of the model's dearest open escrow; undefined when none is known. */
  tokenPrice(model: string): bigint | undefined {
    return this.#prices.get(model);
  }

  /** Resolves once a read that started after this call has completed (or failed: false). */
  async reloadAfterMiss(): Promise<boolean> {
    const missAt = performance.now();
    const gap = this.#o.missReloadMs ?? 250;
    for (let i = 0; i < 3 && this.#readStartedAt <= missAt; i++) {
      const wait = this.#lastForcedAt + gap - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (this.#readStartedAt > missAt) break;
      if (this.#loading === undefined) this.#lastForcedAt = performance.now();
      await this.reload();
    }
    return this.#readStartedAt > missAt;
  }

  reload(): Promise<void> {
    this.#loading ??= (async () => {
      const started = performance.now();
      try {
        const { sql } = this.#o.database;
        const [rows, prices] = await Promise.all([
          sql<KeyRow[]>`
            select id::text as id, key_hash, models, budget_ngonka::text as budget, budget_period as period,
                   rpm, tpm, max_concurrent, (extract(epoch from expires_at) * 1000)::float8 as expires_ms
              from api_keys where revoked_at is null`,
          sql<{ model_id: string; price: string }[]>`
            select model_id, max((chain_row->>'token_price')::numeric)::text as price
              from escrows where state not in ('settled', 'failed') and chain_row ? 'token_price'
             group by model_id`,
        ]);
        const now = new Date();
        const budgeted = rows
          .filter((r) => r.budget !== null)
          .map((r) => ({
            id: `key-${r.id}`,
            since: budgetPeriodOf(r.period ?? 'total', now).start.toISOString(),
          }));
        const spends =
          budgeted.length === 0
            ? []
            : await sql<{ id: string; spent: string }[]>`
                select v.id, coalesce(sum(u.cost), 0)::text as spent
                  from jsonb_to_recordset(${JSON.stringify(budgeted)}::text::jsonb) as v(id text, since timestamptz)
                  left join usage_records u on u.key_id = v.id and u.at >= v.since
                 group by v.id`;
        const spent = new Map(spends.map((s) => [s.id, BigInt(s.spent)]));
        this.#keys = rows.map((r) => ({
          id: r.id,
          hash: Buffer.from(r.key_hash),
          models: r.models === null ? null : new Set(r.models),
          budget: r.budget === null ? null : BigInt(r.budget),
          period: r.period ?? 'total',
          rpm: r.rpm ?? 0,
          tpm: r.tpm ?? 0,
          maxConcurrent: r.max_concurrent ?? 0,
          expiresAtMs: r.expires_ms === null ? null : Number(r.expires_ms),
          ledgerSpend: spent.get(`key-${r.id}`) ?? 0n,
        }));
        this.#prices = new Map(prices.map((p) => [p.model_id, BigInt(p.price)]));
        this.#readStartedAt = Math.max(this.#readStartedAt, started);
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }
}
