// Every statement on the `escrows` table (schema.ts; spec §2.1, §3.1): the controller, the proxy
// and the escrow runtime read and write it only through these functions, so the id's encoding (a
// chain counter: numeric(20) in Postgres, bigint in code, decimal text on the wire) and the meaning
// of each filter ("serving" = state `active` and the routing flag on, spec §2.1) live in one place.
// Joins other tables' callers need are here too, as named queries.
import type { Sql } from 'postgres';

/** The one encoding of an escrow id as a statement parameter (cast with `::numeric` beside it). */
const idParam = (escrowId: bigint): string => escrowId.toString();

/** The columns most callers read (never the sealed creator key: creatorKeySourceOf reads it). */
export interface EscrowRecord {
  escrowId: bigint;
  chainId: string;
  modelId: string;
  creator: string;
  amount: bigint;
  epochIndex: bigint;
  version: string;
  state: string;
  /** The local routing flag (spec §2.1 `active`). */
  active: boolean;
  role: string;
  signerKeyEnv: string | null;
  hasEncryptedKey: boolean;
  lastError: string | null;
}

interface RecordRow {
  escrow_id: string;
  chain_id: string;
  model_id: string;
  creator: string;
  amount: string;
  epoch_index: string;
  version: string;
  state: string;
  active: boolean;
  role: string;
  signer_key_env: string | null;
  encrypted: boolean;
  last_error: string | null;
}

const recordOf = (r: RecordRow): EscrowRecord => ({
  escrowId: BigInt(r.escrow_id),
  chainId: r.chain_id,
  modelId: r.model_id,
  creator: r.creator,
  amount: BigInt(r.amount),
  epochIndex: BigInt(r.epoch_index),
  version: r.version,
  state: r.state,
  active: r.active,
  role: r.role,
  signerKeyEnv: r.signer_key_env,
  hasEncryptedKey: r.encrypted,
  lastError: r.last_error,
});

export async function findEscrow(sql: Sql, escrowId: bigint): Promise<EscrowRecord | undefined> {
  const [row] = await sql<RecordRow[]>`
    select escrow_id::text as escrow_id, chain_id, model_id, creator, amount::text as amount,
           epoch_index::text as epoch_index, version, state, active, role, signer_key_env,
           signer_key_encrypted is not null as encrypted, last_error
      from escrows where escrow_id = ${idParam(escrowId)}::numeric`;
  return row ? recordOf(row) : undefined;
}

/** Where the escrow's creator key comes from: an env variable's name, or the key sealed at rest. */
export interface CreatorKeySource {
  signerKeyEnv: string | null;
  signerKeyEncrypted: Uint8Array | null;
}

export async function creatorKeySourceOf(sql: Sql, escrowId: bigint): Promise<CreatorKeySource | undefined> {
  const [row] = await sql<{ signer_key_env: string | null; signer_key_encrypted: Buffer | null }[]>`
    select signer_key_env, signer_key_encrypted from escrows where escrow_id = ${idParam(escrowId)}::numeric`;
  if (!row) return undefined;
  return {
    signerKeyEnv: row.signer_key_env,
    signerKeyEncrypted: row.signer_key_encrypted ? new Uint8Array(row.signer_key_encrypted) : null,
  };
}

export interface NewEscrow {
  escrowId: bigint;
  chainId: string;
  modelId: string;
  creator: string;
  amount: bigint;
  epochIndex: bigint;
  version: string;
  state: string;
  active: boolean;
  /** The chain's row as read at registration (jsonb). */
  chainRow: unknown;
  signerKeyEnv: string | null;
  signerKeyEncrypted: Uint8Array | null;
}

/**
 * Registers an escrow; false when the id is registered already (the first registration stands).
 * The chain row goes as JSON text cast to jsonb, so the handle's json serializer (drizzle replaces
 * it, client.ts) never matters.
 */
export async function insertEscrow(sql: Sql, e: NewEscrow): Promise<boolean> {
  const inserted = await sql`
    insert into escrows (escrow_id, chain_id, model_id, creator, amount, epoch_index, version, state, active,
                         chain_row, signer_key_env, signer_key_encrypted)
    values (${idParam(e.escrowId)}::numeric, ${e.chainId}, ${e.modelId}, ${e.creator}, ${e.amount.toString()},
            ${e.epochIndex.toString()}, ${e.version}, ${e.state}, ${e.active}, ${JSON.stringify(e.chainRow)}::text::jsonb,
            ${e.signerKeyEnv}, ${e.signerKeyEncrypted ? Buffer.from(e.signerKeyEncrypted) : null})
    on conflict (escrow_id) do nothing
    returning 1`;
  return inserted.length === 1;
}

export async function deleteEscrow(sql: Sql, escrowId: bigint): Promise<boolean> {
  const rows = await sql`delete from escrows where escrow_id = ${idParam(escrowId)}::numeric returning 1`;
  return rows.length === 1;
}

/** Moves the lifecycle state to `to` only from one of `from` (spec §3.1); true when it moved. */
export async function moveState(
  sql: Sql,
  escrowId: bigint,
  from: readonly string[],
  to: string,
): Promise<boolean> {
  const moved = await sql`
    update escrows set state = ${to}, updated_at = now()
     where escrow_id = ${idParam(escrowId)}::numeric and state in ${sql(from as string[])}
    returning 1`;
  return moved.length === 1;
}

/** Sets the state whatever it was (test fixtures and the owner's hand-back, architecture §2.6). */
export async function setState(sql: Sql, escrowId: bigint, state: string): Promise<void> {
  await sql`update escrows set state = ${state}, updated_at = now() where escrow_id = ${idParam(escrowId)}::numeric`;
}

/** The local routing flag (spec §2.1 `active`); false when the escrow is not registered. */
export async function setActive(sql: Sql, escrowId: bigint, active: boolean): Promise<boolean> {
  const rows = await sql`
    update escrows set active = ${active}, updated_at = now()
     where escrow_id = ${idParam(escrowId)}::numeric
    returning 1`;
  return rows.length === 1;
}

/** Stores (or clears, with null) the escrow's last error; its model when registered. */
export async function setLastError(
  sql: Sql,
  escrowId: bigint,
  lastError: string | null,
): Promise<{ modelId: string } | undefined> {
  const [row] = await sql<{ model_id: string }[]>`
    update escrows set last_error = ${lastError}, updated_at = now() where escrow_id = ${idParam(escrowId)}::numeric
    returning model_id`;
  return row ? { modelId: row.model_id } : undefined;
}

/** A fault: the routing flag off and its cause kept, the lifecycle state left as it is. */
export async function recordFault(sql: Sql, escrowId: bigint, lastError: string): Promise<void> {
  await sql`update escrows set active = false, last_error = ${lastError}, updated_at = now()
             where escrow_id = ${idParam(escrowId)}::numeric`;
}

/** Gives a rotation role to an escrow that is still `manual`; true when it was tagged. */
export async function tagManualRole(sql: Sql, escrowId: bigint, role: string): Promise<boolean> {
  const rows = await sql`
    update escrows set role = ${role}, updated_at = now()
     where escrow_id = ${idParam(escrowId)}::numeric and role = 'manual' returning 1`;
  return rows.length === 1;
}

/**
 * Turns up to `count` serving `regular` escrows of a model from epoch `minEpoch` on into `temp`,
 * the newest ones (highest ids); the ids turned, in no particular order.
 */
export async function promoteRegularToTemp(
  sql: Sql,
  modelId: string,
  count: number,
  minEpoch: bigint,
): Promise<bigint[]> {
  const rows = await sql<{ escrow_id: string }[]>`
    update escrows set role = 'temp', updated_at = now()
     where escrow_id in (
       select escrow_id from escrows
        where model_id = ${modelId} and role = 'regular' and state = 'active' and active
          and epoch_index >= ${minEpoch.toString()}::numeric
        order by escrow_id desc limit ${count})
    returning escrow_id::text as escrow_id`;
  return rows.map((r) => BigInt(r.escrow_id));
}

/** Every registered escrow's id, ascending. */
export async function listIds(sql: Sql): Promise<bigint[]> {
  const rows = await sql<
    { escrow_id: string }[]
  >`select escrow_id::text as escrow_id from escrows order by escrow_id`;
  return rows.map((r) => BigInt(r.escrow_id));
}

/** A serving escrow (state `active`, routing flag on): what a replica may own (architecture §2.2). */
export interface ServingEscrow {
  escrowId: bigint;
  modelId: string;
  role: string;
  version: string;
  signerKeyEnv: string | null;
  /** iv ‖ tag ‖ ciphertext under GATEWAY_ENCRYPTION_KEY, or null; never log it. */
  signerKeyEncrypted: Uint8Array | null;
}

export async function listServing(sql: Sql): Promise<ServingEscrow[]> {
  const rows = await sql<
    {
      escrow_id: string;
      model_id: string;
      role: string;
      version: string;
      signer_key_env: string | null;
      signer_key_encrypted: Buffer | null;
    }[]
  >`select escrow_id::text as escrow_id, model_id, role, version, signer_key_env, signer_key_encrypted
      from escrows
     where state = 'active' and active
     order by escrow_id`;
  return rows.map((r) => ({
    escrowId: BigInt(r.escrow_id),
    modelId: r.model_id,
    role: r.role,
    version: r.version,
    signerKeyEnv: r.signer_key_env,
    signerKeyEncrypted: r.signer_key_encrypted ? new Uint8Array(r.signer_key_encrypted) : null,
  }));
}

/** An escrow not yet settled, with what settle-window and batch decisions read. */
export interface UnsettledEscrow {
  escrowId: bigint;
  modelId: string;
  role: string;
  state: string;
  active: boolean;
  amount: bigint;
  epochIndex: bigint;
  /** execution_timeout as the chain row was frozen at registration; null on older rows. */
  executionTimeout: string | null;
}

export async function listUnsettled(sql: Sql, filter: { modelId?: string } = {}): Promise<UnsettledEscrow[]> {
  const model = filter.modelId ?? null;
  const rows = await sql<
    {
      escrow_id: string;
      model_id: string;
      role: string;
      state: string;
      active: boolean;
      amount: string;
      epoch_index: string;
      execution_timeout: string | null;
    }[]
  >`select escrow_id::text as escrow_id, model_id, role, state, active, amount::text as amount,
           epoch_index::text as epoch_index, chain_row->>'execution_timeout' as execution_timeout
      from escrows
     where state <> 'settled' and (${model}::text is null or model_id = ${model})
     order by escrow_id`;
  return rows.map((r) => ({
    escrowId: BigInt(r.escrow_id),
    modelId: r.model_id,
    role: r.role,
    state: r.state,
    active: r.active,
    amount: BigInt(r.amount),
    epochIndex: BigInt(r.epoch_index),
    executionTimeout: r.execution_timeout,
  }));
}

/** Escrows neither settled nor failed, with the token price their chain row was registered with. */
export async function listOpenPrices(
  sql: Sql,
): Promise<{ escrowId: bigint; modelId: string; tokenPrice: string | null }[]> {
  const rows = await sql<{ escrow_id: string; model_id: string; price: string | null }[]>`
    select escrow_id::text as escrow_id, model_id, (chain_row->>'token_price')::numeric::text as price
      from escrows where state not in ('settled', 'failed')`;
  return rows.map((r) => ({ escrowId: BigInt(r.escrow_id), modelId: r.model_id, tokenPrice: r.price }));
}

/** Rotated (`temp` or `regular`) escrows of a model in state `active` (routed or not) from an epoch before `beforeEpoch`. */
export async function listRotatedBefore(sql: Sql, modelId: string, beforeEpoch: bigint): Promise<bigint[]> {
  const rows = await sql<{ escrow_id: string }[]>`
    select escrow_id::text as escrow_id from escrows
     where model_id = ${modelId} and role in ('temp', 'regular') and state = 'active'
       and epoch_index < ${beforeEpoch.toString()}::numeric
     order by escrow_id`;
  return rows.map((r) => BigInt(r.escrow_id));
}

/**
 * A model's escrows of one role that serve (state `active`, routing flag on), with `withRetiring`
 * also those on their way to settled.
 */
export async function listByRole(
  sql: Sql,
  modelId: string,
  role: string,
  withRetiring = false,
): Promise<bigint[]> {
  const rows = await sql<{ escrow_id: string }[]>`
    select escrow_id::text as escrow_id from escrows
     where model_id = ${modelId} and role = ${role}
       and ((state = 'active' and active) or (${withRetiring} and state in ('draining', 'finalizing', 'finalized', 'settling')))
     order by escrow_id`;
  return rows.map((r) => BigInt(r.escrow_id));
}

/** Each escrow with its session head's durable nonce (the pool rebuild's input). */
export interface EscrowWithNonce {
  escrowId: bigint;
  modelId: string;
  state: string;
  active: boolean;
  amount: bigint;
  lastNonce: bigint | null;
  lastError: string | null;
}

export async function listWithSessionNonce(sql: Sql): Promise<EscrowWithNonce[]> {
  const rows = await sql<
    {
      escrow_id: string;
      model_id: string;
      state: string;
      active: boolean;
      amount: string;
      last_nonce: string | null;
      last_error: string | null;
    }[]
  >`select e.escrow_id::text as escrow_id, e.model_id, e.state, e.active, e.amount::text as amount,
           h.last_nonce::text as last_nonce, e.last_error
      from escrows e left join session_heads h on h.escrow_id = e.escrow_id
     order by e.escrow_id`;
  return rows.map((r) => ({
    escrowId: BigInt(r.escrow_id),
    modelId: r.model_id,
    state: r.state,
    active: r.active,
    amount: BigInt(r.amount),
    lastNonce: r.last_nonce === null ? null : BigInt(r.last_nonce),
    lastError: r.last_error,
  }));
}

/** One escrow as the admin listing shows it: its record, session nonce, finalize flag and txs. */
export interface EscrowOverview extends EscrowRecord {
  lastNonce: string | null;
  finalized: boolean;
  createTxHash: string | null;
  settleTxHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export async function listOverviews(sql: Sql, only?: bigint): Promise<EscrowOverview[]> {
  const id = only === undefined ? null : idParam(only);
  const rows = await sql<
    (RecordRow & {
      last_nonce: string | null;
      finalized: boolean;
      create_tx_hash: string | null;
      settle_tx_hash: string | null;
      created_at: Date;
      updated_at: Date;
    })[]
  >`
    select e.escrow_id::text as escrow_id, e.model_id, e.chain_id, e.creator, e.amount::text as amount,
           e.epoch_index::text as epoch_index, e.version, e.state, e.active, e.role, e.signer_key_env,
           e.signer_key_encrypted is not null as encrypted, h.last_nonce::text as last_nonce,
           (f.escrow_id is not null or h.finalize_document is not null) as finalized,
           (select c.tx_hash from chain_tx_commitments c where c.escrow_id = e.escrow_id and c.kind = 'create_escrow'
             and c.status = 'included' limit 1) as create_tx_hash,
           (select c.tx_hash from chain_tx_commitments c where c.escrow_id = e.escrow_id and c.kind = 'settle_escrow'
             order by c.created_at desc limit 1) as settle_tx_hash,
           e.last_error, e.created_at, e.updated_at
      from escrows e
      left join session_heads h on h.escrow_id = e.escrow_id
      left join finalize_documents f on f.escrow_id = e.escrow_id
     where ${id}::numeric is null or e.escrow_id = ${id}::numeric
     order by e.escrow_id`;
  return rows.map((r) => ({
    ...recordOf(r),
    lastNonce: r.last_nonce,
    finalized: r.finalized,
    createTxHash: r.create_tx_hash,
    settleTxHash: r.settle_tx_hash,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  }));
}
