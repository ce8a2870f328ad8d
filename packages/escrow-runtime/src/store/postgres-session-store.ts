// SessionStore on Postgres (architecture §2, §4): the system of record for every signed diff. Each
// escrow's session_heads row carries the fencing token (minted here by acquire, §2.1) and the last
// nonce, and every content write is conditional on it: appendDiff moves the head from nonce − 1 to
// nonce in one statement only while the writer's token is current; the other writes lock the row
// (`for no key update`) and check the token first. acquire bumps the token under that same row lock,
// so it fences every older writer at once, and no two writers can both store a diff for one nonce
// (§2.3). Raw SQL through postgres.js: these conditional writes read best as the statements Postgres
// runs.
//
// Group commit (group-commit.ts, on by default): appendDiff and saveWrites calls of all sessions of
// the process that arrive while a statement of their kind is in flight share the next statement,
// each write with its own fencing check in it (one escrow per write, so a write whose check fails
// only drops out: the others commit, and it is then decided alone exactly as a lone write whose
// one-statement attempt found the condition false). A call resolves only after the statement that
// carried it returned, so the write-ahead rule (§2.3: durable before it is sent) holds per write.
import type { PayloadWire } from '@gonka-gateway/devshard';
import {
  firstOfConsecutive,
  type SessionRecord,
  type SessionStore,
  SessionStoreError,
  SessionStoreErrorCode,
  type SessionWrites,
  type StoredDiff,
  type StoredSession,
} from '@gonka-gateway/devshard/session';
import { sqlState } from '@gonka-gateway/shared';
import type { Sql, TransactionSql } from 'postgres';
import {
  type DiffWithPayloadRow,
  diffFromRow,
  type PayloadRow,
  payloadFromRow,
  toBuffer,
  toBytes,
  txsBlob,
} from './diff-rows.js';
import { fixedStatement } from './fixed-statement.js';
import { type Carried, GroupCommit } from './group-commit.js';
import { recordFromJson, recordToJson } from './record-json.js';

// Not (yet) re-exported by the devshard index; derived here rather than widening its public face.
type StoredSnapshot = NonNullable<StoredSession['snapshot']>;
type Tx = TransactionSql<Record<string, never>>;
type Db = Sql<Record<string, never>> | Tx;

interface HeadRow {
  record: unknown;
  last_nonce: string;
  fencing_token: string;
  finalize_document: string | null;
}

const UNIQUE_VIOLATION = '23505';

/**
 * JSON sent as text and cast by Postgres (`::text::jsonb`): the handle of @gonka-gateway/shared
 * openDatabase() is wrapped by drizzle, which replaces postgres.js's json/jsonb serializers with
 * pass-through ones, so `sql.json(…)` would send an object where a string is expected. A text
 * parameter goes through the same way on both handles.
 */
const jsonText = (value: unknown): string => JSON.stringify(value);

const sameBytes = (a: Uint8Array, b: Uint8Array) => toBuffer(a).equals(toBuffer(b));

/**
 * Diff columns joined with the payload still stored for it (payload columns are null once pruned).
 * Every ORDER BY names the table column (`d.nonce`): the `nonce::text as nonce` output alias would
 * otherwise win and sort 10 before 9.
 */
const DIFF_COLUMNS = `d.nonce::text as nonce, d.txs, d.user_sig, d.post_state_root, d.root, d.warm_key_bindings,
  p.prompt, p.model, p.input_length::text as input_length, p.max_tokens::text as max_tokens,
  p.started_at::text as started_at`;

/**
 * The CTEs of SessionWrites, reading the escrow id from a `head` CTE defined before them: nothing
 * is written when `head` is empty. The statement text is the same whatever is empty, so Postgres
 * keeps one prepared plan. Arrays travel as text[] (bytes as hex, numbers as decimal text):
 * drizzle's wrapper of the shared handle replaces postgres.js's bytea[] and numeric[] serializers.
 * Data-modifying CTEs all see the statement's starting snapshot, so a key both added and deleted is
 * left out of the insert rather than racing the delete (the memory store: add, then delete).
 */
const WRITES = fixedStatement`added as (
    insert into session_pending_txs (escrow_id, dedup_key, tx)
    select head.escrow_id, t.dedup_key, decode(t.hex, 'hex')
    from head, unnest(${'addKeys'}::text[], ${'addHex'}::text[])
      with ordinality as t(dedup_key, hex, ord)
    where t.dedup_key <> all(${'deleteKeys'}::text[])
    order by t.ord
    on conflict (escrow_id, dedup_key) do nothing
  ), deleted as (
    delete from session_pending_txs
    where escrow_id = (select escrow_id from head) and dedup_key = any(${'deleteKeys'}::text[])
  ), pruned as (
    delete from session_payloads
    where escrow_id = (select escrow_id from head)
      and inference_id = any(${'prune'}::text[]::numeric[])
  ), progress as (
    insert into session_host_progress (escrow_id, host_address, synced_nonce)
    select head.escrow_id, h.address, h.nonce::numeric
    from head, unnest(${'hostAddresses'}::text[], ${'hostNonces'}::text[]) as h(address, nonce)
    on conflict (escrow_id, host_address) do update
      set synced_nonce = greatest(session_host_progress.synced_nonce, excluded.synced_nonce),
          updated_at = now()
  ), signed as (
    insert into session_state_signatures (escrow_id, nonce, slot_id, signature)
    select head.escrow_id, s.nonce::numeric, s.slot_id::int, decode(s.hex, 'hex')
    from head, unnest(${'signatureNonces'}::text[], ${'signatureSlots'}::text[],
      ${'signatureHex'}::text[]) as s(nonce, slot_id, hex)
    on conflict (escrow_id, nonce, slot_id) do nothing
  )`;

type WriteName = (typeof WRITES.names)[number];

/** The parameters of WRITES. */
function writeValues(w: SessionWrites): Record<WriteName, string[]> {
  const add = w.addPending ?? [];
  // One row per host: an upsert may not touch a row twice in one statement.
  const hosts = new Map<string, bigint>();
  for (const h of w.hostProgress ?? [])
    if (h.nonce > (hosts.get(h.address) ?? -1n)) hosts.set(h.address, h.nonce);
  const sigs = (w.signatures ?? []).flatMap((s) => s.signatures.map((e) => ({ nonce: s.nonce, ...e })));
  const hex = (b: Uint8Array) => toBuffer(b).toString('hex');
  // Rows keep the given order (`seq` is arrival order); the first of two equal keys wins, as does
  // a key already pending.
  return {
    addKeys: add.map((t) => t.key),
    addHex: add.map((t) => hex(t.bytes)),
    deleteKeys: [...(w.deletePending ?? [])],
    prune: (w.prunePayloads ?? []).map(String),
    hostAddresses: [...hosts.keys()],
    hostNonces: [...hosts.values()].map(String),
    signatureNonces: sigs.map((s) => String(s.nonce)),
    signatureSlots: sigs.map((s) => String(s.slotId)),
    signatureHex: sigs.map((s) => hex(s.signature)),
  };
}

/**
 * appendDiff's common case in one statement: the head moves from nonce − 1 to nonce only when the
 * token is current, and the diff, its payload and the carried writes are written only when it did.
 */
const APPEND_IF_NEXT = fixedStatement`
  with head as (
    update session_heads set last_nonce = ${'nonce'}::numeric, updated_at = now()
    where escrow_id = ${'escrowId'}::numeric and fencing_token = ${'token'}::bigint
      and last_nonce = ${'previousNonce'}::numeric
    returning escrow_id
  ), diff as (
    insert into session_diffs
      (escrow_id, nonce, txs, user_sig, post_state_root, root, warm_key_bindings, fencing_token)
    select escrow_id, ${'nonce'}::numeric, ${'txs'}::bytea,
      ${'userSig'}::bytea, ${'postStateRoot'}::bytea,
      ${'root'}::bytea, ${'warmKeys'}::text::jsonb,
      ${'token'}::bigint
    from head
  ), payload as (
    insert into session_payloads (escrow_id, inference_id, prompt, model, input_length, max_tokens, started_at)
    select escrow_id, ${'nonce'}::numeric, ${'prompt'}::bytea,
      ${'model'}::text, ${'inputLength'}::numeric,
      ${'maxTokens'}::numeric, ${'startedAt'}::numeric
    from head where ${'hasPayload'}::boolean
  ), ${WRITES}
  select count(*)::int as applied from head`;

/**
 * saveWrites in one statement: `head` takes #fenced's row lock and yields the row only while the
 * token is current; every write reads from it.
 */
const SAVE_WRITES = fixedStatement`
  with head as materialized (
    select escrow_id from session_heads
    where escrow_id = ${'escrowId'}::numeric and fencing_token = ${'token'}::bigint
    for no key update
  ), ${WRITES}
  select count(*)::int as fenced from head`;

/** The carried writes of #appendLocked, whose transaction already holds the head row. */
const LOCKED_WRITES = fixedStatement`
  with head as (select ${'escrowId'}::numeric as escrow_id), ${WRITES} select 1`;

/**
 * The CTEs of SessionWrites for a statement that carries the writes of several sessions (group
 * commit, group-commit.ts): WRITES with every row tagged by its write's position (`ord`, 1-based)
 * in the statement, read against a `head` CTE of (escrow_id, ord) defined before them that holds
 * only the writes whose fencing check passed; a write missing from `head` writes nothing. Per
 * write the rules of WRITES hold unchanged (a key both added and deleted is left out of the insert).
 */
const BATCH_WRITES = fixedStatement`added as (
    insert into session_pending_txs (escrow_id, dedup_key, tx)
    select head.escrow_id, t.dedup_key, decode(t.hex, 'hex')
    from unnest(${'addOrd'}::text[]::bigint[], ${'addKeys'}::text[], ${'addHex'}::text[])
      with ordinality as t(ord, dedup_key, hex, seq)
    join head on head.ord = t.ord
    where not exists (
      select 1 from unnest(${'deleteOrd'}::text[]::bigint[], ${'deleteKeys'}::text[]) as d(ord, dedup_key)
      where d.ord = t.ord and d.dedup_key = t.dedup_key)
    order by t.seq
    on conflict (escrow_id, dedup_key) do nothing
  ), deleted as (
    delete from session_pending_txs p
    using head, unnest(${'deleteOrd'}::text[]::bigint[], ${'deleteKeys'}::text[]) as d(ord, dedup_key)
    where head.ord = d.ord and p.escrow_id = head.escrow_id and p.dedup_key = d.dedup_key
  ), pruned as (
    delete from session_payloads p
    using head, unnest(${'pruneOrd'}::text[]::bigint[], ${'prune'}::text[]) as x(ord, inference_id)
    where head.ord = x.ord and p.escrow_id = head.escrow_id and p.inference_id = x.inference_id::numeric
  ), progress as (
    insert into session_host_progress (escrow_id, host_address, synced_nonce)
    select head.escrow_id, h.address, h.nonce::numeric
    from head join unnest(${'hostOrd'}::text[]::bigint[], ${'hostAddresses'}::text[], ${'hostNonces'}::text[])
      as h(ord, address, nonce) on h.ord = head.ord
    on conflict (escrow_id, host_address) do update
      set synced_nonce = greatest(session_host_progress.synced_nonce, excluded.synced_nonce),
          updated_at = now()
  ), signed as (
    insert into session_state_signatures (escrow_id, nonce, slot_id, signature)
    select head.escrow_id, s.nonce::numeric, s.slot_id::int, decode(s.hex, 'hex')
    from head join unnest(${'signatureOrd'}::text[]::bigint[], ${'signatureNonces'}::text[],
      ${'signatureSlots'}::text[], ${'signatureHex'}::text[]) as s(ord, nonce, slot_id, hex) on s.ord = head.ord
    on conflict (escrow_id, nonce, slot_id) do nothing
  )`;

type BatchWriteName = (typeof BATCH_WRITES.names)[number];

/** The parameters of BATCH_WRITES: writeValues of each write, rows tagged with its position. */
function batchWriteValues(all: readonly SessionWrites[]): Record<BatchWriteName, string[]> {
  const v: Record<BatchWriteName, string[]> = {
    addOrd: [],
    addKeys: [],
    addHex: [],
    deleteOrd: [],
    deleteKeys: [],
    pruneOrd: [],
    prune: [],
    hostOrd: [],
    hostAddresses: [],
    hostNonces: [],
    signatureOrd: [],
    signatureNonces: [],
    signatureSlots: [],
    signatureHex: [],
  };
  all.forEach((writes, i) => {
    const ord = String(i + 1);
    const w = writeValues(writes);
    const tag = (column: string[], rows: readonly string[]) => {
      for (let k = 0; k < rows.length; k++) column.push(ord);
    };
    tag(v.addOrd, w.addKeys);
    v.addKeys.push(...w.addKeys);
    v.addHex.push(...w.addHex);
    tag(v.deleteOrd, w.deleteKeys);
    v.deleteKeys.push(...w.deleteKeys);
    tag(v.pruneOrd, w.prune);
    v.prune.push(...w.prune);
    tag(v.hostOrd, w.hostAddresses);
    v.hostAddresses.push(...w.hostAddresses);
    v.hostNonces.push(...w.hostNonces);
    tag(v.signatureOrd, w.signatureNonces);
    v.signatureNonces.push(...w.signatureNonces);
    v.signatureSlots.push(...w.signatureSlots);
    v.signatureHex.push(...w.signatureHex);
  });
  return v;
}

/**
 * APPEND_IF_NEXT for several sessions in one statement (group commit), each write one diff or
 * several consecutive ones (appendDiffs): each write's head moves from its first nonce − 1 to its
 * last nonce only when its own token is current, and its diffs, payloads and carried writes are
 * written only when it did, all of them or none; the others' rows commit regardless (one escrow
 * per write, so a fenced-out or behind write only drops out of `head`). `locked` takes the head
 * rows' locks in escrow order before any is updated, as BATCH_SAVE_WRITES does, so two such
 * statements never wait for each other in a cycle. Returns the positions of the writes that were
 * applied.
 */
const BATCH_APPEND_IF_NEXT = fixedStatement`
  with input as (
    select * from unnest(${'escrowIds'}::text[], ${'nonces'}::text[], ${'tokens'}::text[],
      ${'txs'}::text[], ${'userSigs'}::text[], ${'postStateRoots'}::text[], ${'roots'}::text[],
      ${'warmKeys'}::text[], ${'hasPayload'}::text[], ${'prompts'}::text[], ${'models'}::text[],
      ${'inputLengths'}::text[], ${'maxTokens'}::text[], ${'startedAts'}::text[], ${'ords'}::text[])
      with ordinality as i(escrow_id, nonce, token, txs, user_sig, post_state_root, root, warm_keys,
        has_payload, prompt, model, input_length, max_tokens, started_at, ord, seq)
  ), writes as (
    select i.ord::bigint as ord, min(i.escrow_id) as escrow_id, min(i.token) as token,
      min(i.nonce::numeric) as first_nonce, max(i.nonce::numeric) as last_nonce
    from input i group by i.ord::bigint
  ), head as (
    update session_heads h set last_nonce = w.last_nonce, updated_at = now()
    from writes w, (
      select escrow_id from session_heads
      where escrow_id = any(${'escrowIds'}::text[]::numeric[])
      order by escrow_id for no key update
    ) locked
    where h.escrow_id = locked.escrow_id and h.escrow_id = w.escrow_id::numeric
      and h.fencing_token = w.token::bigint and h.last_nonce = w.first_nonce - 1
    returning h.escrow_id, w.ord
  ), diff as (
    insert into session_diffs
      (escrow_id, nonce, txs, user_sig, post_state_root, root, warm_key_bindings, fencing_token)
    select head.escrow_id, i.nonce::numeric, decode(i.txs, 'hex'), decode(i.user_sig, 'hex'),
      decode(i.post_state_root, 'hex'), decode(i.root, 'hex'), i.warm_keys::jsonb, i.token::bigint
    from head join input i on i.ord::bigint = head.ord
  ), payload as (
    insert into session_payloads (escrow_id, inference_id, prompt, model, input_length, max_tokens, started_at)
    select head.escrow_id, i.nonce::numeric, decode(i.prompt, 'hex'), i.model, i.input_length::numeric,
      i.max_tokens::numeric, i.started_at::numeric
    from head join input i on i.ord::bigint = head.ord
    where i.has_payload = 'true'
  ), ${BATCH_WRITES}
  select ord::int as ord from head`;

/**
 * SAVE_WRITES for several sessions in one statement (group commit): `head` locks, in escrow order,
 * the head rows whose token is the write's own, and yields only those; a stale or missing one writes
 * nothing and is asked about alone afterwards. Returns the positions of the writes that were fenced.
 */
const BATCH_SAVE_WRITES = fixedStatement`
  with head as materialized (
    select h.escrow_id, i.ord from session_heads h
    join unnest(${'escrowIds'}::text[], ${'tokens'}::text[]) with ordinality as i(escrow_id, token, ord)
      on h.escrow_id = i.escrow_id::numeric and h.fencing_token = i.token::bigint
    order by h.escrow_id
    for no key update of h
  ), ${BATCH_WRITES}
  select ord::int as ord from head`;

interface AppendEntry {
  readonly escrowId: string;
  /** One diff (appendDiff) or consecutive ones (appendDiffs), written all or none. */
  readonly diffs: readonly StoredDiff[];
  readonly token: bigint;
  readonly writes: SessionWrites;
}

/**
 * Whether a diff's payload is written: not when the same write prunes it (a later diff of an
 * appendDiffs left Pending the inference an earlier one started). Data-modifying CTEs all see the
 * statement's starting snapshot, so the prune would not see the insert; the memory store inserts
 * and then prunes, and skipping the insert ends the same.
 */
function keepsPayload(entry: AppendEntry, diff: StoredDiff): boolean {
  if (!diff.payload) return false;
  return entry.diffs.length === 1 || !(entry.writes.prunePayloads ?? []).includes(diff.nonce);
}

/** The range a write covers, for messages. */
const span = (diffs: readonly StoredDiff[]) =>
  diffs.length === 1 ? `nonce ${diffs[0]!.nonce}` : `nonces ${diffs[0]!.nonce}…${diffs.at(-1)!.nonce}`;

interface SaveEntry {
  readonly escrowId: string;
  readonly writes: SessionWrites;
  readonly token: bigint;
}

/**
 * An error Postgres itself answered with: the statement (its own implicit transaction) did not
 * commit, or committed and then the session was terminated; either way repeating each write alone
 * is safe, since an identical append is a no-op and the carried writes are idempotent. Anything
 * else (the connection lost) leaves the outcome unknown and is passed to every write as it is.
 */
const isServerError = (error: unknown): boolean =>
  error instanceof Error && error.name === 'PostgresError' && /^[0-9A-Z]{5}$/.test(sqlState(error) ?? '');

export interface PostgresSessionStoreOptions {
  /**
   * Group commit of appendDiff and saveWrites across the process's sessions (group-commit.ts;
   * default on). Off: every write is its own statement.
   */
  readonly groupCommit?: boolean;
  /** Most writes one statement carries (default 128). */
  readonly maxBatch?: number;
}

export class PostgresSessionStore implements SessionStore {
  readonly #sql: Sql<Record<string, never>>;
  readonly #appends: GroupCommit<AppendEntry> | undefined;
  readonly #saves: GroupCommit<SaveEntry> | undefined;

  /** `sql`: a postgres.js pool on a database migrated by @gonka-gateway/shared (runMigrations). */
  constructor(sql: Sql<Record<string, never>>, options: PostgresSessionStoreOptions = {}) {
    this.#sql = sql;
    if (options.groupCommit ?? true) {
      const maxBatch = options.maxBatch ?? 128;
      this.#appends = new GroupCommit<AppendEntry>({
        key: (e) => e.escrowId,
        maxBatch,
        one: (e) => this.#appendAlone(e),
        many: (carried) => this.#appendMany(carried),
      });
      this.#saves = new GroupCommit<SaveEntry>({
        key: (e) => e.escrowId,
        maxBatch,
        one: (e) => this.#saveAlone(e.escrowId, e.writes, e.token),
        many: (carried) => this.#saveMany(carried),
      });
    }
  }

  async create(record: SessionRecord): Promise<void> {
    const rows = await this.#sql`
      insert into session_heads (escrow_id, record)
      values (${record.escrowId}::numeric, ${jsonText(recordToJson(record))}::text::jsonb)
      on conflict (escrow_id) do nothing
      returning 1 as created`;
    if (rows.length === 0) throw new SessionStoreError(SessionStoreErrorCode.Exists, record.escrowId);
  }

  async load(escrowId: string): Promise<StoredSession | undefined> {
    // One snapshot of every table, so the head, diffs and pending txs agree with each other.
    return this.#sql.begin('isolation level repeatable read read only', async (tx) => {
      const [head] = await tx<HeadRow[]>`
        select record, last_nonce::text as last_nonce, fencing_token::text as fencing_token, finalize_document
        from session_heads where escrow_id = ${escrowId}::numeric`;
      return head ? this.#session(tx, escrowId, head) : undefined;
    });
  }

  async acquire(escrowId: string): Promise<StoredSession> {
    // The bump takes the head's row lock until commit: fenced writes of older owners wait and then
    // see the new token; what they committed before is in the load that follows (same transaction).
    return this.#sql.begin(async (tx) => {
      const [head] = await tx<HeadRow[]>`
        update session_heads set fencing_token = fencing_token + 1, updated_at = now()
        where escrow_id = ${escrowId}::numeric
        returning record, last_nonce::text as last_nonce, fencing_token::text as fencing_token, finalize_document`;
      if (!head) throw new SessionStoreError(SessionStoreErrorCode.NotFound, escrowId);
      return this.#session(tx, escrowId, head);
    });
  }

  async appendDiff(
    escrowId: string,
    diff: StoredDiff,
    fencingToken: bigint,
    writes: SessionWrites = {},
  ): Promise<void> {
    const entry: AppendEntry = { escrowId, diffs: [diff], token: fencingToken, writes };
    if (this.#appends) return this.#appends.submit(entry);
    return this.#appendAlone(entry);
  }

  /**
   * Consecutive diffs in one write, all or none (SessionStore.appendDiffs): one entry of the group
   * commit, so it shares a statement with other escrows' writes like a single diff does.
   */
  async appendDiffs(
    escrowId: string,
    diffs: readonly StoredDiff[],
    fencingToken: bigint,
    writes: SessionWrites = {},
  ): Promise<void> {
    firstOfConsecutive(diffs);
    const entry: AppendEntry = { escrowId, diffs: [...diffs], token: fencingToken, writes };
    if (this.#appends) return this.#appends.submit(entry);
    return this.#appendAlone(entry);
  }

  /** One write in its own statement (and, when that finds the head elsewhere, under the row lock). */
  async #appendAlone(e: AppendEntry): Promise<void> {
    await this.#conflictIfDuplicate(e.diffs, async () => {
      const applied =
        e.diffs.length === 1
          ? await this.#appendIfNext(e.escrowId, e.diffs[0]!, e.token, e.writes)
          : (await this.#appendManyIfNext([e])).has(1);
      if (applied) return;
      await this.#appendLocked(e);
    });
  }

  /** The head row orders appenders, so a duplicate key means a second writer slipped past it (none
   * can); it is reported as the conflict it is rather than a driver error. */
  async #conflictIfDuplicate(diffs: readonly StoredDiff[], write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (sqlState(error) === UNIQUE_VIOLATION)
        throw new SessionStoreError(SessionStoreErrorCode.NonceConflict, `${span(diffs)} taken`);
      throw error;
    }
  }

  /**
   * Several sessions' appends in one statement (BATCH_APPEND_IF_NEXT). Each write is settled only
   * after the statement returned: applied ones resolve; one whose condition did not hold (stale
   * token, a head elsewhere, an identical retry) is decided alone under its row lock, exactly as a
   * lone append that found the condition false; the others' rows were committed regardless. A
   * statement Postgres refused committed nothing of the batch: each write is repeated alone, so
   * only a write that fails by itself fails. A lost connection is an unknown outcome for every
   * write of the batch, reported to each as it is (append.ts repeats the identical append).
   */
  async #appendMany(carried: readonly Carried<AppendEntry>[]): Promise<void> {
    let applied: Set<number>;
    try {
      applied = await this.#appendManyIfNext(carried.map((c) => c.entry));
    } catch (error) {
      if (!isServerError(error)) throw error;
      await Promise.all(
        carried.map(({ entry: e, resolve, reject }) => this.#appendAlone(e).then(resolve, reject)),
      );
      return;
    }
    await Promise.all(
      carried.map(({ entry: e, resolve, reject }, i) =>
        applied.has(i + 1)
          ? resolve()
          : this.#conflictIfDuplicate(e.diffs, () => this.#appendLocked(e)).then(resolve, reject),
      ),
    );
  }

  async #appendManyIfNext(entries: readonly AppendEntry[]): Promise<Set<number>> {
    const hex = (b: Uint8Array) => toBuffer(b).toString('hex');
    const rows = entries.flatMap((e, i) => e.diffs.map((d) => ({ ord: String(i + 1), e, d })));
    const result = await this.#sql.unsafe<{ ord: number }[]>(
      BATCH_APPEND_IF_NEXT.text,
      BATCH_APPEND_IF_NEXT.values({
        escrowIds: rows.map((r) => r.e.escrowId),
        nonces: rows.map((r) => r.d.nonce.toString()),
        tokens: rows.map((r) => r.e.token.toString()),
        txs: rows.map((r) => hex(txsBlob(r.d))),
        userSigs: rows.map((r) => hex(r.d.diff.userSig)),
        postStateRoots: rows.map((r) => hex(r.d.diff.postStateRoot)),
        roots: rows.map((r) => hex(r.d.root)),
        warmKeys: rows.map((r) => jsonText(r.d.warmKeysBound.map((b) => ({ ...b })))),
        hasPayload: rows.map((r) => String(keepsPayload(r.e, r.d))),
        prompts: rows.map((r) => (r.d.payload ? hex(r.d.payload.prompt) : '')),
        models: rows.map((r) => r.d.payload?.model ?? ''),
        inputLengths: rows.map((r) => r.d.payload?.inputLength.toString() ?? '0'),
        maxTokens: rows.map((r) => r.d.payload?.maxTokens.toString() ?? '0'),
        startedAts: rows.map((r) => r.d.payload?.startedAt.toString() ?? '0'),
        ords: rows.map((r) => r.ord),
        ...batchWriteValues(entries.map((e) => e.writes)),
      }),
      { prepare: true },
    );
    return new Set(result.map((r) => r.ord));
  }

  /**
   * The common case in one statement (one round trip, committed on its own): the head moves from
   * nonce − 1 to nonce only when the token is current, and the diff, its payload and the writes it
   * carries (the pending txs it consumes, the payloads it prunes, whatever the session deferred to
   * it: WRITES) are written only when it did. A concurrent acquire or appender holds the head row;
   * Postgres re-checks the condition on the row it then finds, so at most one such write wins.
   * False when the condition did not hold: the caller then decides under the row lock.
   */
  async #appendIfNext(
    escrowId: string,
    diff: StoredDiff,
    token: bigint,
    writes: SessionWrites,
  ): Promise<boolean> {
    const p = diff.payload;
    const nonce = diff.nonce.toString();
    const [row] = await this.#sql.unsafe<{ applied: number }[]>(
      APPEND_IF_NEXT.text,
      APPEND_IF_NEXT.values({
        escrowId,
        nonce,
        previousNonce: (diff.nonce - 1n).toString(),
        token: token.toString(),
        txs: toBuffer(txsBlob(diff)),
        userSig: toBuffer(diff.diff.userSig),
        postStateRoot: toBuffer(diff.diff.postStateRoot),
        root: toBuffer(diff.root),
        warmKeys: jsonText(diff.warmKeysBound.map((b) => ({ ...b }))),
        hasPayload: p !== undefined,
        prompt: p ? toBuffer(p.prompt) : null,
        model: p?.model ?? null,
        inputLength: p?.inputLength.toString() ?? null,
        maxTokens: p?.maxTokens.toString() ?? null,
        startedAt: p?.startedAt.toString() ?? null,
        ...writeValues(writes),
      }),
      { prepare: true },
    );
    return row?.applied === 1;
  }

  /**
   * Every other case, decided under the head row lock: stale, missing, identical retry (every diff
   * of the write stored as it is), conflict.
   */
  async #appendLocked(e: AppendEntry): Promise<void> {
    const { escrowId, diffs, token: fencingToken, writes } = e;
    const first = diffs[0]!;
    const lastDiff = diffs.at(-1)!;
    await this.#sql.begin(async (tx) => {
      const last = await this.#fenced(tx, escrowId, fencingToken);
      if (first.nonce !== last + 1n) {
        if (first.nonce >= 1n && lastDiff.nonce <= last) {
          const same = await Promise.all(diffs.map((d) => this.#storedEquals(tx, escrowId, d)));
          if (same.every(Boolean)) return;
        }
        throw new SessionStoreError(
          SessionStoreErrorCode.NonceConflict,
          `expected ${last + 1n}, got ${span(diffs)}`,
        );
      }
      // The head moved to nonce − 1 after the one-statement attempt looked (a write of ours that was
      // still in flight): write it here, under the lock.
      const statements: Promise<unknown>[] = diffs.map(
        (diff) =>
          tx`insert into session_diffs
             (escrow_id, nonce, txs, user_sig, post_state_root, root, warm_key_bindings, fencing_token)
           values (${escrowId}::numeric, ${diff.nonce.toString()}::numeric, ${toBuffer(txsBlob(diff))},
             ${toBuffer(diff.diff.userSig)}, ${toBuffer(diff.diff.postStateRoot)}, ${toBuffer(diff.root)},
             ${jsonText(diff.warmKeysBound.map((b) => ({ ...b })))}::text::jsonb, ${fencingToken.toString()}::bigint)`,
      );
      statements.push(
        tx`update session_heads set last_nonce = ${lastDiff.nonce.toString()}::numeric, updated_at = now()
           where escrow_id = ${escrowId}::numeric`,
        // The row is locked by #fenced above: `head` only names it for the carried writes.
        tx.unsafe(LOCKED_WRITES.text, LOCKED_WRITES.values({ escrowId, ...writeValues(writes) }), {
          prepare: true,
        }),
      );
      for (const diff of diffs) {
        if (keepsPayload(e, diff))
          statements.push(this.#insertPayload(tx, escrowId, diff.nonce, diff.payload!));
      }
      // Pipelined on the transaction's connection: one round trip for the whole write.
      await Promise.all(statements);
    });
  }

  async readDiffs(escrowId: string, from: bigint, to: bigint): Promise<StoredDiff[]> {
    const rows = await this.#sql.unsafe<DiffWithPayloadRow[]>(
      `select ${DIFF_COLUMNS} from session_diffs d
       left join session_payloads p on p.escrow_id = d.escrow_id and p.inference_id = d.nonce
       where d.escrow_id = $1::numeric and d.nonce between $2::numeric and $3::numeric
       order by d.nonce`,
      [escrowId, from.toString(), to.toString()],
    );
    if (rows.length === 0) await this.#mustExist(this.#sql, escrowId);
    return rows.map(diffFromRow);
  }

  // saveWrites runs after most host responses (architecture §4: the hot path), so it is one
  // statement — one round trip — instead of begin / lock / write / commit: the `head` CTE takes the
  // same row lock as #fenced and yields the row only while the token is current, and every write
  // reads from it. Under a concurrent acquire the lock waits, Postgres re-checks the token on the
  // bumped row, `head` comes back empty and nothing is written. Why it was empty (missing or stale)
  // is asked only then.

  async saveWrites(escrowId: string, writes: SessionWrites, fencingToken: bigint): Promise<void> {
    if (this.#saves) return this.#saves.submit({ escrowId, writes, token: fencingToken });
    return this.#saveAlone(escrowId, writes, fencingToken);
  }

  /**
   * Several sessions' saveWrites in one statement (BATCH_SAVE_WRITES), settled as #appendMany
   * settles appends: a write not fenced is asked about alone (stale or missing), a statement
   * Postgres refused is repeated write by write, a lost connection is reported to each.
   */
  async #saveMany(carried: readonly Carried<SaveEntry>[]): Promise<void> {
    let fenced: Set<number>;
    try {
      const rows = await this.#sql.unsafe<{ ord: number }[]>(
        BATCH_SAVE_WRITES.text,
        BATCH_SAVE_WRITES.values({
          escrowIds: carried.map((c) => c.entry.escrowId),
          tokens: carried.map((c) => c.entry.token.toString()),
          ...batchWriteValues(carried.map((c) => c.entry.writes)),
        }),
        { prepare: true },
      );
      fenced = new Set(rows.map((r) => r.ord));
    } catch (error) {
      if (!isServerError(error)) throw error;
      await Promise.all(
        carried.map(({ entry: e, resolve, reject }) =>
          this.#saveAlone(e.escrowId, e.writes, e.token).then(resolve, reject),
        ),
      );
      return;
    }
    await Promise.all(
      carried.map(({ entry: e, resolve, reject }, i) =>
        fenced.has(i + 1) ? resolve() : this.#notFenced(e.escrowId, e.token).then(resolve, reject),
      ),
    );
  }

  async #saveAlone(escrowId: string, writes: SessionWrites, fencingToken: bigint): Promise<void> {
    const [row] = await this.#sql.unsafe<{ fenced: number }[]>(
      SAVE_WRITES.text,
      SAVE_WRITES.values({ escrowId, token: fencingToken.toString(), ...writeValues(writes) }),
      { prepare: true },
    );
    if (row?.fenced !== 1) await this.#notFenced(escrowId, fencingToken);
  }

  async saveSnapshot(escrowId: string, snapshot: StoredSnapshot, fencingToken: bigint): Promise<void> {
    await this.#sql.begin(async (tx) => {
      const last = await this.#fenced(tx, escrowId, fencingToken);
      if (snapshot.nonce < 1n || snapshot.nonce > last) {
        throw new SessionStoreError(
          SessionStoreErrorCode.NonceConflict,
          `no diff at snapshot nonce ${snapshot.nonce}`,
        );
      }
      const nonce = snapshot.nonce.toString();
      const [newer] = await tx`select 1 from session_snapshots
        where escrow_id = ${escrowId}::numeric and nonce >= ${nonce}::numeric limit 1`;
      if (newer) return;
      // Only the newest is ever loaded; older ones would just grow the table.
      await Promise.all([
        tx`insert into session_snapshots (escrow_id, nonce, root, state)
           values (${escrowId}::numeric, ${nonce}::numeric, ${toBuffer(snapshot.root)}, ${toBuffer(snapshot.state)})`,
        tx`delete from session_snapshots where escrow_id = ${escrowId}::numeric and nonce < ${nonce}::numeric`,
      ]);
    });
  }

  async loadSignatures(escrowId: string, nonce: bigint): Promise<Map<number, Uint8Array>> {
    const rows = await this.#sql<{ slot_id: number | null; signature: Buffer | null }[]>`
      select s.slot_id, s.signature from session_heads h
      left join session_state_signatures s on s.escrow_id = h.escrow_id and s.nonce = ${nonce.toString()}::numeric
      where h.escrow_id = ${escrowId}::numeric`;
    if (rows.length === 0) throw new SessionStoreError(SessionStoreErrorCode.NotFound, escrowId);
    return new Map(rows.flatMap((r) => (r.slot_id === null ? [] : [[r.slot_id, toBytes(r.signature)]])));
  }

  async saveFinalizeDocument(escrowId: string, json: string, fencingToken: bigint): Promise<void> {
    await this.#sql.begin(async (tx) => {
      await this.#fenced(tx, escrowId, fencingToken);
      const [row] = await tx<{ finalize_document: string }[]>`
        update session_heads set finalize_document = coalesce(finalize_document, ${json}), updated_at = now()
        where escrow_id = ${escrowId}::numeric
        returning finalize_document`;
      if (row?.finalize_document !== json)
        throw new SessionStoreError(SessionStoreErrorCode.DocumentConflict, escrowId);
    });
  }

  /**
   * Locks the head row for this write and checks the token; returns the last nonce. `for no key
   * update` conflicts with acquire's bump and with other fenced writes, but not with the key-share
   * locks that host-progress and signature inserts take through their foreign keys.
   */
  async #fenced(tx: Tx, escrowId: string, token: bigint): Promise<bigint> {
    const [head] = await tx<{ last_nonce: string; fencing_token: string }[]>`
      select last_nonce::text as last_nonce, fencing_token::text as fencing_token from session_heads
      where escrow_id = ${escrowId}::numeric for no key update`;
    if (!head) throw new SessionStoreError(SessionStoreErrorCode.NotFound, escrowId);
    const current = BigInt(head.fencing_token);
    if (token !== current) {
      throw new SessionStoreError(
        SessionStoreErrorCode.StaleToken,
        `token ${token} is not current (${current})`,
      );
    }
    return BigInt(head.last_nonce);
  }

  /** A one-statement fenced write found no current head: throws NotFound or StaleToken. */
  async #notFenced(escrowId: string, token: bigint): Promise<never> {
    await this.#sql.begin((tx) => this.#fenced(tx, escrowId, token));
    // The token became current again between the two statements: impossible, tokens only grow.
    throw new SessionStoreError(SessionStoreErrorCode.StaleToken, `token ${token} is not current`);
  }

  /** Whether the diff stored at `diff.nonce` was signed over exactly these bytes (idempotent retry). */
  async #storedEquals(tx: Tx, escrowId: string, diff: StoredDiff): Promise<boolean> {
    const [row] = await tx<{ txs: Buffer; user_sig: Buffer; post_state_root: Buffer | null }[]>`
      select txs, user_sig, post_state_root from session_diffs
      where escrow_id = ${escrowId}::numeric and nonce = ${diff.nonce.toString()}::numeric`;
    return (
      row !== undefined &&
      sameBytes(toBytes(row.txs), txsBlob(diff)) &&
      sameBytes(toBytes(row.user_sig), diff.diff.userSig) &&
      sameBytes(toBytes(row.post_state_root), diff.diff.postStateRoot)
    );
  }

  #insertPayload(tx: Tx, escrowId: string, inferenceId: bigint, p: PayloadWire) {
    return tx`insert into session_payloads (escrow_id, inference_id, prompt, model, input_length, max_tokens, started_at)
      values (${escrowId}::numeric, ${inferenceId.toString()}::numeric, ${toBuffer(p.prompt)}, ${p.model},
        ${p.inputLength.toString()}::numeric, ${p.maxTokens.toString()}::numeric, ${p.startedAt.toString()}::numeric)`;
  }

  async #session(tx: Tx, escrowId: string, head: HeadRow): Promise<StoredSession> {
    const [snapshot] = await tx<{ nonce: string; root: Buffer; state: Buffer }[]>`
      select nonce::text as nonce, root, state from session_snapshots
      where escrow_id = ${escrowId}::numeric order by session_snapshots.nonce desc limit 1`;
    const after = snapshot?.nonce ?? '0';
    const [diffs, pending, hosts, payloads] = await Promise.all([
      tx.unsafe<DiffWithPayloadRow[]>(
        `select ${DIFF_COLUMNS} from session_diffs d
         left join session_payloads p on p.escrow_id = d.escrow_id and p.inference_id = d.nonce
         where d.escrow_id = $1::numeric and d.nonce > $2::numeric order by d.nonce`,
        [escrowId, after],
      ),
      tx<{ dedup_key: string; tx: Buffer }[]>`
        select dedup_key, tx from session_pending_txs where escrow_id = ${escrowId}::numeric order by seq`,
      tx<{ host_address: string; synced_nonce: string }[]>`
        select host_address, synced_nonce::text as synced_nonce from session_host_progress
        where escrow_id = ${escrowId}::numeric`,
      tx<PayloadRow[]>`
        select inference_id::text as inference_id, prompt, model, input_length::text as input_length,
          max_tokens::text as max_tokens, started_at::text as started_at
        from session_payloads where escrow_id = ${escrowId}::numeric order by session_payloads.inference_id`,
    ]);
    return {
      record: recordFromJson(head.record),
      fencingToken: BigInt(head.fencing_token),
      lastNonce: BigInt(head.last_nonce),
      ...(snapshot
        ? {
            snapshot: {
              nonce: BigInt(snapshot.nonce),
              root: toBytes(snapshot.root),
              state: toBytes(snapshot.state),
            },
          }
        : {}),
      diffs: diffs.map(diffFromRow),
      pendingTxs: pending.map((p) => ({ key: p.dedup_key, bytes: toBytes(p.tx) })),
      hostSync: new Map(hosts.map((h) => [h.host_address, BigInt(h.synced_nonce)])),
      payloads: new Map(payloads.map((p) => [BigInt(p.inference_id), payloadFromRow(p)])),
      ...(head.finalize_document !== null ? { finalizeDocument: head.finalize_document } : {}),
    };
  }

  async #mustExist(db: Db, escrowId: string): Promise<void> {
    const [head] = await db`select 1 from session_heads where escrow_id = ${escrowId}::numeric`;
    if (!head) throw new SessionStoreError(SessionStoreErrorCode.NotFound, escrowId);
  }
}
