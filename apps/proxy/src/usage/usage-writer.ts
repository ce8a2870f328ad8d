// The usage consumer (docs/keys-and-usage.md, "The usage ledger"): every proxy replica reads the
// usage stream in a consumer group (consumer name = replica id), writes each batch to usage_records
// in one statement and only then XACKs it. At-least-once: a crash between the insert and the XACK
// redelivers the batch (our own pending entries are re-read at start; another replica's are taken
// over with XAUTOCLAIM once idle), and the insert is idempotent by request id: a redelivered row
// changes nothing, except that a reservation-only row takes the final cost when a later event
// brings it.
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type postgres from 'postgres';
import { dedupeRows, type UsageRow, usageRowOf } from './usage-row.js';

export const USAGE_GROUP = 'usage-writers';

export interface UsageWriterOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly sql: postgres.Sql;
  /** The replica id: a restarted replica re-reads what it left pending. */
  readonly consumer: string;
  readonly batchSize?: number;
  /**
   * XREADGROUP BLOCK (default 5 s): an idle replica asks Redis once per block. stop() ends a pending
   * block at once (CLIENT UNBLOCK); only if that fails does it wait up to this long for the loop.
   */
  readonly blockMs?: number;
  /**
   * After a read that found entries, wait this long before the next one (default 100 ms), so a busy
   * replica writes one batch per window instead of a read, an insert and an XACK per request (three
   * round trips per chat request otherwise). A usage row lands at most this much later.
   */
  readonly batchWindowMs?: number;
  /** Entries pending this long on any consumer are claimed (the consumer died). Default 60 s. */
  readonly claimIdleMs?: number;
  readonly onError?: (error: Error) => void;
}

type Entry = [id: string, fields: string[]];
type ReadReply = [stream: string, entries: Entry[]][] | null;

const entriesOf = (reply: ReadReply): Entry[] => reply?.[0]?.[1] ?? [];

export class UsageWriter {
  readonly #o: UsageWriterOptions;
  /** Blocking reads get their own connection so they never stall the proxy's commands. */
  #conn: Redis | undefined;
  /** CLIENT ID of #conn's current connection (a reconnect changes it), for CLIENT UNBLOCK at stop. */
  #connId: number | undefined;
  #loopEnded = false;
  #loop: Promise<void> | undefined;
  #running = false;
  /** Ids of the last batch the loop inserted, acknowledged with its next read. */
  #acks: string[] = [];

  constructor(options: UsageWriterOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const conn = this.#o.redis.duplicate();
    this.#conn = conn;
    conn.on('error', (error: Error) => this.#o.onError?.(error));
    conn.on('close', () => {
      this.#connId = undefined;
    });
    this.#loopEnded = false;
    this.#loop = this.#run().finally(() => {
      this.#loopEnded = true;
    });
  }

  async stop(): Promise<void> {
    this.#running = false;
    // A blocked read returns empty, as if its block had ended; no entry is lost to it. A read sent
    // just before `running` turned false can reach Redis after the UNBLOCK, hence a few repeats.
    // Not awaited: with Redis away the command would wait for it, and stop() must not.
    for (let tries = 0; tries < 20 && !this.#loopEnded && this.#connId !== undefined; tries++) {
      this.#o.redis.client('UNBLOCK', this.#connId).catch(() => undefined);
      await Promise.race([this.#loop, new Promise((r) => setTimeout(r, 50))]);
    }
    await this.#loop;
    const acks = this.#acks;
    this.#acks = [];
    if (acks.length > 0) await this.#ack(acks).catch((error: Error) => this.#o.onError?.(error));
    this.#conn?.disconnect();
    this.#conn = undefined;
  }

  /** Reads, writes and acknowledges one batch; true when it handled entries. Exposed for tests. */
  async step(conn: Redis = this.#o.redis, id: '>' | '0' = '>', block = true): Promise<boolean> {
    const entries = await this.#read(conn, id, block, []);
    await this.write(entries);
    return entries.length > 0;
  }

  /**
   * XREADGROUP, with `acks` — ids of the batch before, in usage_records already — acknowledged in
   * the same socket write: one write per batch window instead of two. An XACK that fails
   * leaves those entries pending; XAUTOCLAIM brings them back and the insert is idempotent.
   */
  async #read(conn: Redis, id: '>' | '0', block: boolean, acks: readonly string[]): Promise<Entry[]> {
    const { keys, consumer } = this.#o;
    const args: (string | number)[] = ['GROUP', USAGE_GROUP, consumer, 'COUNT', this.#o.batchSize ?? 200];
    if (block) args.push('BLOCK', this.#o.blockMs ?? 5_000);
    args.push('STREAMS', keys.usageStream, id);
    const read = args as Parameters<Redis['xreadgroup']>;
    if (acks.length === 0) return entriesOf((await conn.xreadgroup(...read)) as ReadReply);
    const replies = await conn
      .pipeline()
      .xack(keys.usageStream, USAGE_GROUP, ...acks)
      .xreadgroup(...read)
      .exec();
    const [[ackError], [readError, reply]] = replies as [[Error | null], [Error | null, unknown]];
    if (ackError) this.#o.onError?.(ackError);
    if (readError) throw readError;
    return entriesOf(reply as ReadReply);
  }

  /** Takes over entries another consumer left pending longer than claimIdleMs, and writes them. */
  async claim(): Promise<number> {
    const { redis, keys, consumer } = this.#o;
    let cursor = '0-0';
    let total = 0;
    do {
      const [next, entries] = (await redis.xautoclaim(
        keys.usageStream,
        USAGE_GROUP,
        consumer,
        this.#o.claimIdleMs ?? 60_000,
        cursor,
        'COUNT',
        this.#o.batchSize ?? 200,
      )) as [string, (Entry | null)[]];
      const live = entries.filter((e): e is Entry => e !== null);
      await this.write(live);
      total += live.length;
      cursor = next;
    } while (cursor !== '0-0' && this.#running);
    return total;
  }

  /** Insert (idempotent), then XACK: a crash in between only redelivers. */
  async write(entries: readonly Entry[]): Promise<void> {
    const acks = await this.#insert(entries);
    if (acks.length > 0) await this.#ack(acks);
  }

  /** The batch's rows into usage_records; returns the ids it may acknowledge. */
  async #insert(entries: readonly Entry[]): Promise<string[]> {
    if (entries.length === 0) return [];
    const rows: UsageRow[] = [];
    for (const [id, fields] of entries) {
      const row = usageRowOf(fields ?? []);
      if (row) rows.push(row);
      else this.#o.onError?.(new Error(`usage entry ${id} is not a usage record; acknowledged`));
    }
    if (rows.length > 0) await insertUsageRows(this.#o.sql, dedupeRows(rows));
    return entries.map(([id]) => id);
  }

  async #ack(ids: readonly string[]): Promise<void> {
    await this.#o.redis.xack(this.#o.keys.usageStream, USAGE_GROUP, ...ids);
  }

  async ensureGroup(): Promise<void> {
    try {
      await this.#o.redis.xgroup('CREATE', this.#o.keys.usageStream, USAGE_GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
    }
  }

  async #run(): Promise<void> {
    let lastClaim = 0;
    let ready = false;
    while (this.#running) {
      try {
        if (!ready) {
          await this.ensureGroup();
          // What this consumer read but never acknowledged before a crash or restart.
          while (this.#running && (await this.step(this.#conn, '0', false))) {}
          ready = true;
        }
        if (Date.now() - lastClaim >= (this.#o.claimIdleMs ?? 60_000) / 2) {
          lastClaim = Date.now();
          await this.claim();
        }
        if (!this.#running) break;
        // Asked here, where nothing else waits on the connection; again after a reconnect.
        this.#connId ??= Number(await this.#conn!.client('ID'));
        const entries = await this.#read(this.#conn!, '>', true, this.#acks);
        this.#acks = [];
        // Acknowledged with the next read, or at stop.
        this.#acks = await this.#insert(entries);
        if (entries.length > 0 && this.#running) {
          await new Promise((r) => setTimeout(r, this.#o.batchWindowMs ?? 100));
        }
      } catch (error) {
        // Redis or Postgres away: the entries stay pending and come back; try again shortly.
        this.#o.onError?.(error as Error);
        if (String((error as Error).message).includes('NOGROUP')) ready = false;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}

export async function insertUsageRows(sql: postgres.Sql, rows: readonly UsageRow[]): Promise<void> {
  await sql`
    insert into usage_records (request_id, key_id, model, escrow_id, nonce, nonces, input_tokens,
      output_tokens, cost, cost_final, status, total_ms, ttft_ms, replica_id, at, attempts)
    select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(request_id text, key_id text,
      model text, escrow_id numeric, nonce numeric, nonces text, input_tokens integer,
      output_tokens integer, cost numeric, cost_final boolean, status smallint, total_ms integer,
      ttft_ms integer, replica_id text, at timestamptz, attempts jsonb)
    on conflict (request_id) do update
      set cost = excluded.cost, cost_final = true, updated_at = now(),
          attempts = coalesce(excluded.attempts, usage_records.attempts)
      where excluded.cost_final and not usage_records.cost_final`;
}
