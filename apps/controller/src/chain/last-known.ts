// Reads that may use their last known answer while the chain REST or the public node is down
// (docs/operator-guide.md "When the public node is down"). Each successful read is kept in Postgres
// (last_known_reads, written only when it changed); an unreachable source is answered from that copy,
// logged with the marker `node_unreachable_stored_copy` and counted
// (`devshard_gateway_node_stored_copy_total{what}`). Only reads whose answer is fixed for an escrow's
// life or changes by governance use it (the params' max_nonce for a finalize); anything that moves
// money reads the chain itself.
import {
  ChainError,
  type InferenceParams,
  parseInferenceParams,
  queryInferenceParams,
} from '@gonka-gateway/chain';
import type { StoredCopyRead } from '@gonka-gateway/shared';
import type { Sql } from 'postgres';
import type { ControllerContext } from '../controller-context.js';

export interface LastKnown {
  body: unknown;
  readAt: Date;
}

export async function loadLastKnown(sql: Sql, name: StoredCopyRead): Promise<LastKnown | undefined> {
  const [row] = await sql<{ body: unknown; read_at: Date }[]>`
    select body, read_at from last_known_reads where name = ${name}`;
  return row ? { body: row.body, readAt: row.read_at } : undefined;
}

/** Per process: the body last written under each name, so an unchanged answer costs no write. */
const written = new WeakMap<Sql, Map<string, string>>();

export async function saveLastKnown(sql: Sql, name: StoredCopyRead, body: unknown): Promise<void> {
  const text = JSON.stringify(body);
  const mine = written.get(sql) ?? new Map<string, string>();
  written.set(sql, mine);
  if (mine.get(name) === text) return;
  await sql`
    insert into last_known_reads (name, body, read_at) values (${name}, ${text}::text::jsonb, now())
    on conflict (name) do update set body = excluded.body, read_at = now()`;
  mine.set(name, text);
}

/** Logs the marker and counts one read answered from a stored copy. */
export function noteStoredCopy(
  ctx: Pick<ControllerContext, 'logger' | 'metrics'>,
  what: StoredCopyRead,
  fields: Record<string, unknown>,
  err: unknown,
): void {
  ctx.metrics?.storedCopies.inc({ what });
  ctx.logger.warn(
    {
      marker: 'node_unreachable_stored_copy',
      what,
      ...fields,
      err: err instanceof Error ? err.message : String(err),
    },
    'chain or node unreachable: using the stored copy',
  );
}

/** The inference params from the chain REST, or their last known copy while it cannot answer. */
export async function inferenceParamsOrLastKnown(
  ctx: Pick<ControllerContext, 'chain' | 'sql' | 'logger' | 'metrics'>,
): Promise<InferenceParams> {
  let params: InferenceParams;
  try {
    params = await queryInferenceParams(ctx.chain);
  } catch (err) {
    if (!(err instanceof ChainError)) throw err;
    const copy = await loadLastKnown(ctx.sql, 'inference_params');
    if (!copy) throw err;
    noteStoredCopy(ctx, 'inference_params', { readAt: copy.readAt.toISOString() }, err);
    return parseInferenceParams(copy.body);
  }
  await saveLastKnown(ctx.sql, 'inference_params', { params: params.raw }).catch((e: Error) =>
    ctx.logger.warn({ err: e.message }, 'storing the last known inference params failed'),
  );
  return params;
}
