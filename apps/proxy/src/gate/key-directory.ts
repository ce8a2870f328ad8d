// The stored API keys every replica checks callers against (spec §5.1): digests and
// limits of the unrevoked keys, the ledger's spend of each budgeted key in its current period (it
// seeds a Redis spend counter that does not exist yet: a new period, or Redis lost its data) and
// each model's highest token price (what a request's budget reservation is priced at). Re-read with
// the settings (gate/settings.ts: at once on the controller's change message, every second while
// that subscription is down, every 30 s otherwise), so a created, changed, rotated or revoked key
// takes effect on every replica within a second. Two things change without a message, so they are
// re-read here: a budget period ending (a read at the boundary, so a new period's counter is never
// seeded with the last period's spend) and a newly registered escrow (its price may be the model's
// highest: the pool snapshot reports escrows this directory has not priced, followPool). A key not
// found is answered after a read that started after it arrived (reads forced this way start at most
// every 250 ms, shared by every miss meanwhile), so a key just created works on its first request
// and a flood of wrong keys costs at most four reads a second.
import { performance } from 'node:perf_hooks';
import { type BudgetPeriod, budgetPeriodOf, type Database, escrowTable } from '@gonka-gateway/shared';

/** How long after a period's end its read runs (the clock the end is computed from may lag). */
const PERIOD_END_MARGIN_MS = 50;

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
  /** Wall clock for budget periods (default: Date); tests move it across a period's end. */
  readonly now?: () => Date;
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
  /** Escrows whose price the last read saw, and those the pool reported unpriced (asked once each). */
  #pricedEscrows: ReadonlySet<string> = new Set();
  readonly #askedEscrows = new Set<string>();
  /** A read at the nearest end of a budgeted key's period. */
  #periodTimer: NodeJS.Timeout | undefined;
  #stopped = false;

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

  /**
   * The pool's escrows (after each pool snapshot read): an escrow this directory has not priced was
   * registered since its last read, so prices are read again (once per such escrow: one that is in
   * the pool but not open in Postgres would otherwise cause a read per pool read).
   */
  followPool(escrowIds: Iterable<bigint>): void {
    let unpriced = false;
    for (const id of escrowIds) {
      const key = id.toString();
      if (this.#pricedEscrows.has(key) || this.#askedEscrows.has(key)) continue;
      this.#askedEscrows.add(key);
      unpriced = true;
    }
    if (unpriced && !this.#stopped) void this.reload().catch(() => undefined);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#periodTimer);
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
          escrowTable.listOpenPrices(sql),
        ]);
        const now = this.#o.now?.() ?? new Date();
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
        const highest = new Map<string, bigint>();
        for (const p of prices) {
          if (p.tokenPrice === null) continue;
          const price = BigInt(p.tokenPrice);
          if (price > (highest.get(p.modelId) ?? -1n)) highest.set(p.modelId, price);
        }
        this.#prices = highest;
        this.#pricedEscrows = new Set(prices.map((p) => p.escrowId.toString()));
        // Only escrows still unpriced stay asked about (the set stays as small as that list).
        for (const id of this.#askedEscrows) if (this.#pricedEscrows.has(id)) this.#askedEscrows.delete(id);
        this.#readStartedAt = Math.max(this.#readStartedAt, started);
        this.#readAtPeriodEnd(now);
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  /**
   * Plans a read just after the nearest end of a budgeted key's period (replacing the last plan): the
   * spend read before it belongs to the ending period and must not seed the next one's counter. A
   * read that still lands before the end (clocks) plans itself again.
   */
  #readAtPeriodEnd(now: Date): void {
    clearTimeout(this.#periodTimer);
    this.#periodTimer = undefined;
    if (this.#stopped) return;
    let nearest = Number.POSITIVE_INFINITY;
    for (const key of this.#keys) {
      if (key.budget === null) continue;
      const end = budgetPeriodOf(key.period, now).end;
      if (end !== null) nearest = Math.min(nearest, end.getTime());
    }
    if (nearest === Number.POSITIVE_INFINITY) return;
    // setTimeout takes at most 2^31 - 1 ms; a later end is planned again by the reads before it.
    const delay = Math.min(Math.max(0, nearest - now.getTime()) + PERIOD_END_MARGIN_MS, 2 ** 31 - 1);
    this.#periodTimer = setTimeout(() => void this.reload().catch(() => undefined), delay);
    this.#periodTimer.unref();
  }
}
