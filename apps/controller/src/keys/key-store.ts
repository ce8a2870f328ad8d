// Virtual API keys (docs/keys-and-usage.md): rows of `api_keys` and what a listing shows
// of them. A key is `sk-` + 48 hex (192 random bits) shown once; only its SHA-256 is stored. A fast
// hash is enough here, unlike for passwords: with 192 bits of entropy nobody can guess a preimage
// of a leaked digest, and an unsalted digest lets every proxy find a presented key by hashing it.
// Every change is announced on the settings channel, so every replica re-reads the keys at once
// (and within a second anyway). Spend is the ledger's (usage_records) or, for a budgeted key, the
// enforced Redis counter of its period when it exists (it is ahead of the ledger by the batch delay).
import { createHash, randomBytes } from 'node:crypto';
import { adjustSpendCounter, type BudgetPeriod, budgetPeriodOf, hashApiKey } from '@gonka-gateway/shared';
import type { KeyView } from '../admin-api.js';
import { announceChange } from '../announce-change.js';
import type { ControllerContext } from '../controller-context.js';

/** Lua counts budgets in doubles (apps/proxy admission.ts): a budget stays exact below 2^53. */
export const MAX_BUDGET_NGONKA = BigInt(Number.MAX_SAFE_INTEGER);

interface Row {
  id: string;
  name: string;
  display_prefix: string;
  models: string[] | null;
  budget: string | null;
  budget_period: BudgetPeriod | null;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  expires_at: Date | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

export function newSecret(): { key: string; hash: Buffer; prefix: string } {
  const key = `sk-${randomBytes(24).toString('hex')}`;
  return { key, hash: hashApiKey(key), prefix: `${key.slice(0, 11)}…` };
}

/** The id DEVSHARD_API_KEYS' usage is recorded under (apps/proxy gate/auth.ts). */
export const ENV_KEY_ID = 'env';

const COLUMNS = `id::text as id, name, display_prefix, models, budget_ngonka::text as budget, budget_period, rpm, tpm,
  max_concurrent, expires_at, metadata, created_at, rotated_at, revoked_at`;

export async function announceKeyChange(ctx: ControllerContext): Promise<void> {
  await announceChange(ctx, ctx.keys.settingsChanges, 'keys');
}

export async function readKeyRows(ctx: ControllerContext, id?: string): Promise<Row[]> {
  const where = id === undefined ? '' : 'where id = $1::bigint';
  return (await ctx.sql.unsafe(
    `select ${COLUMNS} from api_keys ${where} order by id`,
    id === undefined ? [] : [id],
  )) as unknown as Row[];
}

async function ledgerSpend(
  ctx: ControllerContext,
  items: { keyId: string; since: Date }[],
): Promise<Map<string, { spent: bigint; last: Date | null }>> {
  if (items.length === 0) return new Map();
  const list = JSON.stringify(items.map((i) => ({ id: i.keyId, since: i.since.toISOString() })));
  const rows = await ctx.sql<{ id: string; spent: string; last: Date | null }[]>`
    select v.id,
           coalesce((select sum(cost) from usage_records u where u.key_id = v.id and u.at >= v.since), 0)::text as spent,
           (select max(at) from usage_records u where u.key_id = v.id) as last
      from jsonb_to_recordset(${list}::text::jsonb) as v(id text, since timestamptz)`;
  return new Map(rows.map((r) => [r.id, { spent: BigInt(r.spent), last: r.last }]));
}

export async function keyViews(ctx: ControllerContext, rows: Row[], now = new Date()): Promise<KeyView[]> {
  const windows = rows.map((r) => budgetPeriodOf(r.budget_period ?? 'total', now));
  const ledger = await ledgerSpend(
    ctx,
    rows.map((r, i) => ({ keyId: `key-${r.id}`, since: windows[i]!.start })),
  );
  const live =
    rows.length === 0
      ? []
      : await ctx.redis.mget(rows.map((r, i) => ctx.keys.keySpend(r.id, windows[i]!.tag)));
  return rows.map((r, i) => {
    const w = windows[i]!;
    const l = ledger.get(`key-${r.id}`);
    const counter = r.budget !== null ? live[i] : null;
    const spent =
      counter !== null && counter !== undefined && /^-?\d+$/.test(counter)
        ? BigInt(counter)
        : (l?.spent ?? 0n);
    const expired = r.expires_at !== null && r.expires_at.getTime() <= now.getTime();
    return {
      id: r.id,
      name: r.name,
      prefix: r.display_prefix,
      read_only: false,
      status: r.revoked_at ? 'revoked' : expired ? 'expired' : 'active',
      models: r.models,
      budget_ngonka: r.budget,
      budget_period: r.budget_period ?? 'total',
      rpm: r.rpm,
      tpm: r.tpm,
      max_concurrent: r.max_concurrent,
      expires_at: r.expires_at?.toISOString() ?? null,
      metadata: r.metadata ?? {},
      period: { start: w.start.toISOString(), end: w.end?.toISOString() ?? null },
      spend_ngonka: spent.toString(),
      budget_remaining_ngonka:
        r.budget === null ? null : (BigInt(r.budget) > spent ? BigInt(r.budget) - spent : 0n).toString(),
      last_used_at: l?.last?.toISOString() ?? null,
      created_at: r.created_at.toISOString(),
      rotated_at: r.rotated_at?.toISOString() ?? null,
      revoked_at: r.revoked_at?.toISOString() ?? null,
    };
  });
}

/** DEVSHARD_API_KEYS as one read-only entry: the keys are only known as digests, their usage as `env`. */
export async function envKeyView(ctx: ControllerContext, digests: readonly Buffer[]): Promise<KeyView> {
  const l = (await ledgerSpend(ctx, [{ keyId: ENV_KEY_ID, since: new Date(0) }])).get(ENV_KEY_ID);
  const fingerprints = digests.map((d) => createHash('sha256').update(d).digest('hex').slice(0, 8));
  return {
    id: ENV_KEY_ID,
    name: `DEVSHARD_API_KEYS (${digests.length} key${digests.length === 1 ? '' : 's'})`,
    prefix: fingerprints.join(','),
    read_only: true,
    status: 'active',
    models: null,
    budget_ngonka: null,
    budget_period: 'total',
    rpm: null,
    tpm: null,
    max_concurrent: null,
    expires_at: null,
    metadata: {},
    period: { start: new Date(0).toISOString(), end: null },
    spend_ngonka: (l?.spent ?? 0n).toString(),
    budget_remaining_ngonka: null,
    last_used_at: l?.last?.toISOString() ?? null,
    created_at: null,
    rotated_at: null,
    revoked_at: null,
  };
}

/**
 * Moves budgeted keys' counters by corrections of their records' costs (the escrow reconciliation),
 * each in the period its request was answered in, so a budget follows what settlement charged.
 */
export async function applyCostCorrections(
  ctx: ControllerContext,
  corrections: readonly { keyId: string; atMs: number; delta: bigint }[],
): Promise<void> {
  if (corrections.length === 0) return;
  const budgeted = new Map(
    (await readKeyRows(ctx)).filter((r) => r.budget !== null).map((r) => [`key-${r.id}`, r]),
  );
  for (const c of corrections) {
    const key = budgeted.get(c.keyId);
    if (!key) continue;
    const tag = budgetPeriodOf(key.budget_period ?? 'total', new Date(c.atMs)).tag;
    await adjustSpendCounter(ctx.redis, ctx.keys.keySpend(key.id, tag), c.delta);
  }
}
