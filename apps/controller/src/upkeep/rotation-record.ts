// The rotation's record in Postgres (architecture §4 "rotation status"; spec §2.8, §3.4): one row
// per model, epoch and stage (rotation_stages), the suppressed (model, role, epoch) creates, and the
// markers as events. Everything the tick decides is written here before it acts on it, so a
// restarted controller resumes the same stage, and GET /v1/debug/rotation reads the same rows.
import type { Sql } from 'postgres';
import type { ControllerContext } from '../controller-context.js';

export type RotationStageName = 'bridge' | 'target';
export type RotationRole = 'temp' | 'regular';
export type StageStatus = 'creating' | 'retiring' | 'done';

export interface StageRow {
  modelId: string;
  epoch: bigint;
  stage: RotationStageName;
  status: StageStatus;
  role: RotationRole;
  target: number;
  existing: number;
  created: number;
  promoted: number;
  settled: number;
  failed: number;
  /** Escrows this stage still has to drain, finalize and settle. */
  retiring: bigint[];
  /** When a tick first saw a replacement routed (the outgoing escrows are retired then). */
  replacementRoutedAt: Date | null;
  lastError: string | null;
  updatedAt: Date;
}

interface DbStageRow {
  model_id: string;
  epoch: string;
  stage: RotationStageName;
  status: StageStatus;
  role: RotationRole;
  target: number;
  existing: number;
  created: number;
  promoted: number;
  settled: number;
  failed: number;
  retiring: string[];
  replacement_routed_at: Date | null;
  last_error: string | null;
  updated_at: Date;
}

const STAGE_COLUMNS = `model_id, epoch::text as epoch, stage, status, role, target, existing, created, promoted,
  settled, failed, retiring, replacement_routed_at, last_error, updated_at`;

const fromDb = (r: DbStageRow): StageRow => ({
  modelId: r.model_id,
  epoch: BigInt(r.epoch),
  stage: r.stage,
  status: r.status,
  role: r.role,
  target: r.target,
  existing: r.existing,
  created: r.created,
  promoted: r.promoted,
  settled: r.settled,
  failed: r.failed,
  retiring: r.retiring.map((id) => BigInt(id)),
  replacementRoutedAt: r.replacement_routed_at,
  lastError: r.last_error,
  updatedAt: r.updated_at,
});

/** The row of (model, epoch, stage), created with `target` on first sight. */
export async function openStage(
  sql: Sql,
  key: { modelId: string; epoch: bigint; stage: RotationStageName; role: RotationRole; target: number },
): Promise<{ row: StageRow; opened: boolean }> {
  const inserted = await sql<DbStageRow[]>`
    insert into rotation_stages (model_id, epoch, stage, role, target)
    values (${key.modelId}, ${key.epoch.toString()}, ${key.stage}, ${key.role}, ${key.target})
    on conflict do nothing
    returning ${sql.unsafe(STAGE_COLUMNS)}`;
  if (inserted[0]) return { row: fromDb(inserted[0]), opened: true };
  const [row] = await sql<DbStageRow[]>`
    select ${sql.unsafe(STAGE_COLUMNS)} from rotation_stages
     where model_id = ${key.modelId} and epoch = ${key.epoch.toString()}::numeric and stage = ${key.stage}`;
  if (!row) throw new Error(`rotation stage ${key.modelId}/${key.epoch}/${key.stage} vanished`);
  return { row: fromDb(row), opened: false };
}

export type StagePatch = Partial<
  Pick<
    StageRow,
    | 'status'
    | 'existing'
    | 'created'
    | 'promoted'
    | 'settled'
    | 'failed'
    | 'retiring'
    | 'replacementRoutedAt'
    | 'lastError'
  >
>;

export async function updateStage(sql: Sql, row: StageRow, patch: StagePatch): Promise<StageRow> {
  const next = { ...row, ...patch };
  await sql`
    update rotation_stages
       set status = ${next.status}, existing = ${next.existing}, created = ${next.created},
           promoted = ${next.promoted}, settled = ${next.settled}, failed = ${next.failed},
           retiring = ${sql.json(next.retiring.map(String))}, last_error = ${next.lastError},
           replacement_routed_at = ${next.replacementRoutedAt},
           updated_at = now()
     where model_id = ${row.modelId} and epoch = ${row.epoch.toString()}::numeric and stage = ${row.stage}`;
  return next;
}

/** Stages with escrows still to retire (a creating one may have some already), oldest first. */
export async function retiringStages(sql: Sql): Promise<StageRow[]> {
  const rows = await sql<DbStageRow[]>`
    select ${sql.unsafe(STAGE_COLUMNS)} from rotation_stages
     where status = 'retiring' or jsonb_array_length(retiring) > 0
     order by epoch, stage`;
  return rows.map(fromDb);
}

/** The newest stage of each model (highest epoch; target after bridge of the same epoch). */
export async function latestStages(sql: Sql): Promise<Map<string, StageRow>> {
  const rows = await sql<DbStageRow[]>`
    select distinct on (model_id) ${sql.unsafe(STAGE_COLUMNS)} from rotation_stages
     order by model_id, epoch desc, (stage = 'target') desc`;
  return new Map(rows.map((r) => [r.model_id, fromDb(r)]));
}

export async function isSuppressed(sql: Sql, modelId: string, role: RotationRole, epoch: bigint) {
  const rows = await sql`
    select 1 from rotation_suppressions
     where model_id = ${modelId} and role = ${role} and epoch = ${epoch.toString()}::numeric`;
  return rows.length > 0;
}

/** Records the suppression; false when it was already recorded. */
export async function suppress(
  sql: Sql,
  key: { modelId: string; role: RotationRole; epoch: bigint },
  error: string,
): Promise<boolean> {
  const rows = await sql`
    insert into rotation_suppressions (model_id, role, epoch, error)
    values (${key.modelId}, ${key.role}, ${key.epoch.toString()}, ${error})
    on conflict do nothing returning 1`;
  return rows.length === 1;
}

export interface Suppression {
  modelId: string;
  role: RotationRole;
  epoch: bigint;
  error: string;
  at: Date;
}

export async function suppressions(sql: Sql, limitPerModel = 10): Promise<Suppression[]> {
  const rows = await sql<
    { model_id: string; role: RotationRole; epoch: string; error: string; created_at: Date }[]
  >`
    select model_id, role, epoch::text as epoch, error, created_at from (
      select *, row_number() over (partition by model_id order by epoch desc, created_at desc) as n
        from rotation_suppressions) s
     where n <= ${limitPerModel} order by model_id, epoch desc`;
  return rows.map((r) => ({
    modelId: r.model_id,
    role: r.role,
    epoch: BigInt(r.epoch),
    error: r.error,
    at: r.created_at,
  }));
}

/**
 * Markers that put a deposit at risk are logged as errors (alert on them), those that mean something
 * went wrong as warnings, the rest as info.
 */
const ERROR_MARKERS: ReadonlySet<string> = new Set([
  'escrow_past_retire_by',
  'escrow_settle_window_closed_unsettled',
]);
const WARNING_MARKERS: ReadonlySet<string> = new Set([
  'escrow_rotation_create_failed',
  'escrow_rotation_create_suppressed',
  'escrow_rotation_fallback_promoted',
  'escrow_rotation_model_absent',
  'escrow_rotation_underfunded',
  'escrow_rotation_settle_failed',
  'escrow_rotation_no_replacement',
  'escrow_rotation_window_retire',
  'escrow_rotation_tick_error',
  'escrow_depletion_replacement_failed',
]);

export interface RotationEvent {
  modelId: string;
  marker: string;
  epoch: bigint | null;
  detail: Record<string, string | number | boolean | null>;
}

/**
 * Stores the marker and logs it. `once`: skipped (neither stored nor logged) when the same model,
 * marker, epoch and detail were already recorded, so a condition seen every tick is reported once.
 */
export async function recordEvent(
  ctx: Pick<ControllerContext, 'sql' | 'logger' | 'metrics'>,
  event: RotationEvent,
  options: { once?: boolean; message?: string } = {},
): Promise<boolean> {
  const { sql, logger } = ctx;
  const epoch = event.epoch === null ? null : event.epoch.toString();
  const detail = sql.json(event.detail);
  const rows = options.once
    ? await sql`
        insert into rotation_events (model_id, marker, epoch, detail)
        select ${event.modelId}, ${event.marker}, ${epoch}, ${detail}
         where not exists (
           select 1 from rotation_events
            where model_id = ${event.modelId} and marker = ${event.marker}
              and epoch is not distinct from ${epoch}::numeric and detail = ${detail}::jsonb)
        returning 1`
    : await sql`
        insert into rotation_events (model_id, marker, epoch, detail)
        values (${event.modelId}, ${event.marker}, ${epoch}, ${detail}) returning 1`;
  if (rows.length === 0) return false;
  ctx.metrics?.rotationEvents.inc({ marker: event.marker });
  const fields = { marker: event.marker, model: event.modelId, epoch, ...event.detail };
  const message = options.message ?? event.marker.replaceAll('_', ' ');
  if (ERROR_MARKERS.has(event.marker)) logger.error(fields, message);
  else if (WARNING_MARKERS.has(event.marker)) logger.warn(fields, message);
  else logger.info(fields, message);
  return true;
}

export interface StoredEvent {
  marker: string;
  epoch: string | null;
  detail: Record<string, unknown>;
  at: Date;
}

/** How many events /v1/debug/rotation lists per model (the purge keeps at least these). */
export const RECENT_EVENTS_PER_MODEL = 20;

export async function recentEvents(
  sql: Sql,
  modelId: string,
  limit = RECENT_EVENTS_PER_MODEL,
): Promise<StoredEvent[]> {
  return sql<StoredEvent[]>`
    select marker, epoch::text as epoch, detail, at from rotation_events
     where model_id = ${modelId} order by id desc limit ${limit}`;
}
