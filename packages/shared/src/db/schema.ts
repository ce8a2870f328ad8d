// The system of record (architecture.md §4). Money and chain integers are uint64 (numeric(20,0) ↔
// bigint); raw protocol bytes are bytea and kept exactly as signed. Later features add their
// tables as new migrations (`pnpm db:generate`), never by editing an applied one.
import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { bytes, uint64 } from './columns.js';

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true }).notNull().defaultNow();

/** One row (id = 1): the admin settings of spec §2.4, bootstrapped from env on first start only. */
export const settings = pgTable(
  'settings',
  {
    id: smallint('id').primaryKey().default(1),
    defaultRequestMaxTokens: integer('default_request_max_tokens').notNull(),
    requestMaxTokensCap: integer('request_max_tokens_cap').notNull(),
    /** [{model_id, access_mode: 'admin_only' | 'api_key'}] */
    modelLimits: jsonb('model_limits').notNull().default(sql`'[]'::jsonb`),
    /**
     * ["name", …]: top-level chat parameters the proxy passes through without a rule, besides
     * GATEWAY_PASSTHROUGH_PARAMETERS (apps/proxy README "Request policy"; an extension of §2.4).
     */
    passthroughParameters: jsonb('passthrough_parameters').notNull().default(sql`'[]'::jsonb`),
    escrowRotation: jsonb('escrow_rotation').notNull(),
    disabled: jsonb('disabled').notNull(),
    /** Bumped on every change, so replicas can tell a stale cached copy. */
    revision: bigint('revision', { mode: 'bigint' }).notNull().default(sql`1`),
    updatedAt: updatedAt(),
  },
  (t) => [check('settings_single_row', sql`${t.id} = 1`)],
);

export const ESCROW_STATES = [
  'creating',
  'active',
  'draining',
  'finalizing',
  'finalized',
  'settling',
  'settled',
  'failed',
] as const;
export type EscrowState = (typeof ESCROW_STATES)[number];
export const ESCROW_ROLES = ['manual', 'regular', 'temp'] as const;

/** A CHECK that a text column holds one of the listed values (drizzle's enum option only types it). */
function inList(column: AnyPgColumn, values: readonly string[]) {
  return sql`${column} in (${sql.raw(values.map((v) => `'${v}'`).join(', '))})`;
}

/** Escrows (devshards) the gateway knows, with their lifecycle state (architecture.md §3). */
export const escrows = pgTable(
  'escrows',
  {
    escrowId: uint64('escrow_id').primaryKey(),
    chainId: text('chain_id').notNull(),
    modelId: text('model_id').notNull(),
    creator: text('creator').notNull(),
    amount: uint64('amount').notNull(),
    epochIndex: uint64('epoch_index').notNull(),
    /** Runtime name / state-root tag the session is pinned to (e.g. `v5`). */
    version: text('version').notNull(),
    state: text('state', { enum: ESCROW_STATES }).notNull(),
    /** Local flag (spec §2.1 `active`): false = registered but not routed (import, deactivate). */
    active: boolean('active').notNull().default(true),
    /** `regular` or `temp` (rotation bridge) escrows are rotated; `manual` ones are the operator's. */
    role: text('role', { enum: ESCROW_ROLES }).notNull().default('manual'),
    /** The on-chain escrow row frozen at registration (slots, prices, fees, timeouts). */
    chainRow: jsonb('chain_row').notNull(),
    /** Where the creator key comes from: an env variable name, or an encrypted blob below. */
    signerKeyEnv: text('signer_key_env'),
    signerKeyEncrypted: bytes('signer_key_encrypted'),
    lastError: text('last_error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('escrows_state_model_idx').on(t.state, t.modelId),
    check('escrows_state_known', inList(t.state, ESCROW_STATES)),
    check('escrows_role_known', inList(t.role, ESCROW_ROLES)),
    check('escrows_signer_key_source', sql`${t.signerKeyEnv} is null or ${t.signerKeyEncrypted} is null`),
  ],
);

/**
 * Head of each escrow's session: what the session is built from, the last durable nonce and the
 * fencing token of its current writer. The token is minted here at acquire (`token + 1 … RETURNING`,
 * architecture.md §2.1), so it stays unique whatever happens to Redis; a diff insert succeeds only
 * when nonce = last_nonce + 1 and the writer's token is the current one (§2.3), so a stale owner can
 * never sign a second diff for a nonce.
 *
 * No foreign key to `escrows`: the session store is keyed by escrow id alone (the devnet, tests and
 * benchmarks open sessions with no registry row), and signed diffs are the record of what the
 * escrow owes, so a local DELETE of the escrow row must not cascade them away. The other session
 * tables reference this head, so a session is deleted as a unit.
 */
export const sessionHeads = pgTable('session_heads', {
  escrowId: uint64('escrow_id').primaryKey(),
  /** The SessionRecord (escrow row, tag, version, chain params) frozen at adoption; bigints tagged. */
  record: jsonb('record').notNull(),
  lastNonce: uint64('last_nonce').notNull().default(sql`0`),
  fencingToken: bigint('fencing_token', { mode: 'bigint' }).notNull().default(sql`0`),
  /** The finalize document text exactly as stored once (devshard-protocol.md §8.3). */
  finalizeDocument: text('finalize_document'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

const sessionHead = () =>
  uint64('escrow_id')
    .notNull()
    .references(() => sessionHeads.escrowId, { onDelete: 'cascade' });

/** Every signed diff, written before it is sent (write-ahead); bytes exactly as signed. */
export const sessionDiffs = pgTable(
  'session_diffs',
  {
    escrowId: sessionHead(),
    nonce: uint64('nonce').notNull(),
    /** DiffContent fields 1–2 (nonce, txs) as sent in DiffJSON.txs. */
    txs: bytes('txs').notNull(),
    userSig: bytes('user_sig').notNull(),
    postStateRoot: bytes('post_state_root'),
    /** Our state root after this diff (replay checks it; snapshots are taken at it). */
    root: bytes('root').notNull(),
    /** Warm-key bindings this diff introduced (devshard-protocol.md §5.7), so replay needs no chain. */
    warmKeyBindings: jsonb('warm_key_bindings'),
    /** The token of the writer that stored it (audit: which owner signed). */
    fencingToken: bigint('fencing_token', { mode: 'bigint' }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.nonce] })],
);

/**
 * Host-proposed (or own timeout) transactions waiting for the next diff, one row per dedup key, in
 * arrival order (`seq`); deleted in the transaction of the diff that carries them.
 */
export const sessionPendingTxs = pgTable(
  'session_pending_txs',
  {
    escrowId: sessionHead(),
    dedupKey: text('dedup_key').notNull(),
    tx: bytes('tx').notNull(),
    seq: bigint('seq', { mode: 'bigint' }).notNull().generatedAlwaysAsIdentity(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.dedupKey] })],
);

/**
 * The payload of each StartInference (prompt bytes as hashed, devshard-protocol.md §2.5), kept apart
 * from the diffs because refused-timeout voters need it only while the inference is Pending (§7.4);
 * deleted when it leaves Pending.
 */
export const sessionPayloads = pgTable(
  'session_payloads',
  {
    escrowId: sessionHead(),
    /** = the nonce of the diff carrying the StartInference. */
    inferenceId: uint64('inference_id').notNull(),
    prompt: bytes('prompt').notNull(),
    model: text('model').notNull(),
    inputLength: uint64('input_length').notNull(),
    maxTokens: uint64('max_tokens').notNull(),
    /** Unix seconds. */
    startedAt: uint64('started_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.inferenceId] })],
);

/**
 * Root-verified session state at a nonce (architecture.md §2.5), so reopening a long session replays
 * only the diffs after it. `state` is encoded by the devshard package; only the newest is kept.
 */
export const sessionSnapshots = pgTable(
  'session_snapshots',
  {
    escrowId: sessionHead(),
    nonce: uint64('nonce').notNull(),
    root: bytes('root').notNull(),
    state: bytes('state').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.nonce] })],
);

/** Per-host progress: the highest nonce each host index is known to hold. */
export const sessionHostProgress = pgTable(
  'session_host_progress',
  {
    escrowId: sessionHead(),
    hostAddress: text('host_address').notNull(),
    syncedNonce: uint64('synced_nonce').notNull().default(sql`0`),
    lastError: text('last_error'),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.hostAddress] })],
);

/** State signatures collected per slot and nonce (receipt events, GET signatures, finalize). */
export const sessionStateSignatures = pgTable(
  'session_state_signatures',
  {
    escrowId: sessionHead(),
    nonce: uint64('nonce').notNull(),
    slotId: integer('slot_id').notNull(),
    /** Verified against our root at `nonce` before it is stored; the signer is recoverable from it. */
    signature: bytes('signature').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.nonce, t.slotId] })],
);

/**
 * Where each participant of an escrow's group serves (devshard-protocol.md §4.1: the node's
 * participants list, chain-and-network.md §3.3), stored when a session first opens and rewritten when
 * the node answers with another URL. The group is frozen for the escrow's life, so a takeover, a
 * restart or a finalize while the public node is unreachable opens the session from this copy
 * (docs/operator-guide.md "When the public node is down").
 */
export const escrowHosts = pgTable(
  'escrow_hosts',
  {
    escrowId: sessionHead(),
    /** The participant's cold address (a slot holder of the escrow's group). */
    participant: text('participant').notNull(),
    inferenceUrl: text('inference_url').notNull(),
    /** When the node last gave this URL. */
    confirmedAt: timestamp('confirmed_at', { withTimezone: true }).notNull().defaultNow(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.escrowId, t.participant] })],
);

/**
 * The last answer of a chain or node read the gateway can work with when that source is unreachable
 * (docs/operator-guide.md "When the public node is down"): `inference_params` (chain REST params,
 * for the max_nonce a finalize needs), `chain_phase` (the epoch and PoC phase the controller last
 * read). One row per read, overwritten by each newer answer; `body` is the answer as received.
 */
export const lastKnownReads = pgTable('last_known_reads', {
  name: text('name').primaryKey(),
  body: jsonb('body').notNull(),
  readAt: timestamp('read_at', { withTimezone: true }).notNull().defaultNow(),
});

/** The finalize document (spec §2.2, protocol §8.3), stored before settlement is attempted. */
export const finalizeDocuments = pgTable('finalize_documents', {
  escrowId: uint64('escrow_id')
    .primaryKey()
    .references(() => escrows.escrowId, { onDelete: 'cascade' }),
  nonce: uint64('nonce').notNull(),
  version: text('version').notNull(),
  stateRoot: bytes('state_root').notNull(),
  fees: uint64('fees').notNull(),
  document: jsonb('document').notNull(),
  createdAt: createdAt(),
});

export const CHAIN_TX_KINDS = ['create_escrow', 'settle_escrow', 'publish_pubkey'] as const;
export const CHAIN_TX_STATUSES = [
  'prepared',
  'broadcast',
  'included',
  'failed',
  'unknown',
  'expired',
] as const;

/**
 * Chain transactions, recorded with their precomputed hash and raw bytes BEFORE broadcast, so a
 * crash between broadcast and result is reconciled against the chain instead of retried blindly.
 * `business_key` makes one request (or one rotation slot) map to at most one live tx.
 */
export const chainTxCommitments = pgTable(
  'chain_tx_commitments',
  {
    txHash: text('tx_hash').primaryKey(),
    kind: text('kind', { enum: CHAIN_TX_KINDS }).notNull(),
    businessKey: text('business_key').notNull(),
    escrowId: uint64('escrow_id'),
    txBytes: bytes('tx_bytes').notNull(),
    status: text('status', { enum: CHAIN_TX_STATUSES }).notNull(),
    /** After this the tx can no longer land (timeout_timestamp plus margin). */
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    code: integer('code'),
    codespace: text('codespace'),
    rawLog: text('raw_log'),
    height: uint64('height'),
    result: jsonb('result'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('chain_tx_commitments_business_key_idx').on(t.businessKey),
    index('chain_tx_commitments_status_idx').on(t.status),
    check('chain_tx_commitments_kind_known', inList(t.kind, CHAIN_TX_KINDS)),
    check('chain_tx_commitments_status_known', inList(t.status, CHAIN_TX_STATUSES)),
  ],
);

export const BUDGET_PERIODS = ['daily', 'weekly', 'monthly', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/**
 * API keys issued through the admin API (docs/keys-and-usage.md): only the SHA-256 digest
 * is stored, with the key's limits. A null limit is no limit; `models` null = every model the
 * access mode allows. Spend is not a column: it is the usage ledger's, counted live in Redis.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    name: text('name').notNull(),
    keyHash: bytes('key_hash').notNull(),
    /** First characters, to recognise a key in listings without revealing it. */
    displayPrefix: text('display_prefix').notNull(),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    models: jsonb('models'),
    budgetNgonka: uint64('budget_ngonka'),
    budgetPeriod: text('budget_period', { enum: BUDGET_PERIODS }),
    rpm: integer('rpm'),
    tpm: integer('tpm'),
    maxConcurrent: integer('max_concurrent'),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    metadata: jsonb('metadata').notNull().default(sql`'{}'::jsonb`),
    rotatedAt: timestamp('rotated_at', { withTimezone: true }),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('api_keys_key_hash_idx').on(t.keyHash),
    check(
      'api_keys_budget_period_known',
      sql`${t.budgetPeriod} is null or ${inList(t.budgetPeriod, BUDGET_PERIODS)}`,
    ),
  ],
);

/**
 * One row (id = 1): the usage ledger's operator knobs, changed through
 * POST /v1/admin/usage/settings without a restart. 0 retention days = keep every record.
 */
export const usageSettings = pgTable(
  'usage_settings',
  {
    id: smallint('id').primaryKey().default(1),
    retentionDays: integer('retention_days').notNull().default(0),
    /** Keys with their own series in the spend metrics; the rest are summed into key="other". */
    metricsTopKeys: integer('metrics_top_keys').notNull().default(10),
    updatedAt: updatedAt(),
  },
  (t) => [check('usage_settings_single_row', sql`${t.id} = 1`)],
);

/** Every admin action: who (key fingerprint), what, on which target, and the outcome. */
export const adminAuditLog = pgTable(
  'admin_audit_log',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    target: text('target'),
    /** The request with secrets removed. */
    request: jsonb('request'),
    statusCode: integer('status_code').notNull(),
  },
  (t) => [index('admin_audit_log_at_idx').on(t.at)],
);

/**
 * The usage ledger (docs/keys-and-usage.md): one row per chat request, written in batches from the
 * Redis usage stream by the proxies' consumer group (apps/proxy/src/usage/), idempotent by request
 * id. `cost` is the reservation until the inference's Finish is applied (`cost_final` false), then
 * the Finish's charge; only that transition ever updates a row.
 */
export const usageRecords = pgTable(
  'usage_records',
  {
    requestId: text('request_id').primaryKey(),
    keyId: text('key_id').notNull(),
    model: text('model').notNull(),
    escrowId: uint64('escrow_id'),
    /** The nonce that served the request (the last attempt); `nonces` lists every attempt's. */
    nonce: uint64('nonce'),
    nonces: text('nonces').notNull().default(''),
    inputTokens: integer('input_tokens').notNull(),
    outputTokens: integer('output_tokens').notNull(),
    /** ngonka; null when the request never reached a session. */
    cost: uint64('cost'),
    costFinal: boolean('cost_final').notNull().default(false),
    status: smallint('status').notNull(),
    totalMs: integer('total_ms').notNull(),
    ttftMs: integer('ttft_ms'),
    replicaId: text('replica_id').notNull(),
    /**
     * Every attempt of the request (the proxy's AttemptRecord list, apps/proxy/src/chat/usage-events.ts):
     * participant, timings, deadlines hit, outcome, nonces burned; null when the proxy sent none.
     */
    attempts: jsonb('attempts'),
    /** When the proxy answered (the event's time), not when the row was written. */
    at: timestamp('at', { withTimezone: true }).notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('usage_records_at_idx').on(t.at),
    index('usage_records_key_at_idx').on(t.keyId, t.at),
    index('usage_records_escrow_idx').on(t.escrowId, t.nonce),
    index('usage_records_not_final_idx').on(t.escrowId).where(sql`${t.costFinal} = false`),
  ],
);

export const ROTATION_STAGES = ['bridge', 'target'] as const;
export const ROTATION_STAGE_STATUSES = ['creating', 'retiring', 'done'] as const;

/**
 * Automatic rotation (gateway-spec.md §3.4), one row per model, epoch transition and stage: what
 * the rotation tick decided and did, so a restarted controller resumes where it stopped and
 * GET /v1/debug/rotation shows the newest row per model. `retiring` lists the escrows this stage
 * drains, finalizes and settles that are not done yet (decimal strings).
 */
export const rotationStages = pgTable(
  'rotation_stages',
  {
    modelId: text('model_id').notNull(),
    /** The epoch the transition leads into (bridge: the upcoming one; target: the one just begun). */
    epoch: uint64('epoch').notNull(),
    stage: text('stage', { enum: ROTATION_STAGES }).notNull(),
    status: text('status', { enum: ROTATION_STAGE_STATUSES }).notNull().default('creating'),
    /** Role of the escrows the stage creates: `temp` (bridge) or `regular` (target). */
    role: text('role', { enum: ESCROW_ROLES }).notNull(),
    target: integer('target').notNull(),
    existing: integer('existing').notNull().default(0),
    created: integer('created').notNull().default(0),
    promoted: integer('promoted').notNull().default(0),
    settled: integer('settled').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    retiring: jsonb('retiring').notNull().default(sql`'[]'::jsonb`),
    /** When a tick first saw a replacement routed; the same tick retires the outgoing escrows. */
    replacementRoutedAt: timestamp('replacement_routed_at', { withTimezone: true }),
    lastError: text('last_error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.modelId, t.epoch, t.stage] }),
    check('rotation_stages_stage_known', inList(t.stage, ROTATION_STAGES)),
    check('rotation_stages_status_known', inList(t.status, ROTATION_STAGE_STATUSES)),
  ],
);

/**
 * Spec §3.4 "Suppression": after an on-chain create failure (insufficient funds, per-epoch limit)
 * no further create is attempted for the same model, role and epoch.
 */
export const rotationSuppressions = pgTable(
  'rotation_suppressions',
  {
    modelId: text('model_id').notNull(),
    role: text('role', { enum: ESCROW_ROLES }).notNull(),
    epoch: uint64('epoch').notNull(),
    error: text('error').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.modelId, t.role, t.epoch] })],
);

/** The `escrow_rotation_*` / `escrow_depletion_replacement_failed` markers, as logged (spec §3.4, §6). */
export const rotationEvents = pgTable(
  'rotation_events',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    modelId: text('model_id').notNull(),
    marker: text('marker').notNull(),
    epoch: uint64('epoch'),
    detail: jsonb('detail').notNull().default(sql`'{}'::jsonb`),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('rotation_events_model_idx').on(t.modelId, t.id)],
);
