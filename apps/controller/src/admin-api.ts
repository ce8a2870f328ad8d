// The JSON the admin API answers with, declared once: the controller's routes build these shapes and
// the operator console (apps/console) reads them through `import type` from
// `@gonka-gateway/controller/admin-api`. The module holds types only and imports nothing, so it
// type-checks under the console's DOM-only tsconfig and esbuild strips it from the console bundle.
// The routes' JSON schemas (what /openapi.json documents and what fastify serializes by) stay with
// the routes. Amounts in ngonka are decimal strings (uint64 does not fit a JSON number); times are
// ISO strings.

// --- GET /v1/admin/devshards, /v1/admin/devshards/:id (escrow/escrow-view.ts) ---

/**
 * An escrow as the admin API shows it (spec §4 "item shape: not shown"; the gateway choice is in
 * docs/gateway-spec.md §4): the local record, the session head's durable nonce, the pool entry and
 * the latest create/settle tx hashes. Never a private key: only where it comes from.
 */
export interface EscrowView {
  escrow_id: number;
  model_id: string;
  chain_id: string;
  creator: string;
  /** ngonka, decimal string (uint64). */
  amount: string;
  epoch_index: string;
  version: string;
  state: string;
  active: boolean;
  role: string;
  key_source: 'env' | 'encrypted' | 'default';
  private_key_env: string | null;
  nonce: string | null;
  pool: {
    status: string;
    owner: string | null;
    balance_estimate: string;
    /** ngonka held by in-flight reservations (what may return to the balance). */
    reserved: string;
    /** The escrow's max_nonce as its owner knows it; null while unknown (shared nonce-routing.ts). */
    nonce_ceiling: string | null;
    /** Where routing stops for the nonce: max_nonce − (N + 1) − 200, or 19,800 while unknown. */
    routing_stop: string;
    cause: string | null;
  } | null;
  finalized: boolean;
  create_tx_hash: string | null;
  settle_tx_hash: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

// --- POST /v1/admin/devshards/settle (escrow/settle-batch.ts): NDJSON, one line at a time ---

/** Why an escrow of a batch settle was not settled. */
export type SettleErrorCode =
  | 'not_found'
  | 'already_settled'
  | 'wrong_key'
  | 'busy'
  | 'insufficient_funds'
  | 'window_closed'
  | 'broadcast_failed'
  | 'outcome_unknown'
  | 'shutting_down'
  | 'settle_failed';

/** One escrow's result, sent as it ends. */
export type SettleLine =
  | { escrow_id: string; ok: true; tx_hash: string | null; refund: string | null }
  | { escrow_id: string; ok: false; error: { code: SettleErrorCode; message: string } };

export interface SettleSummary {
  total: number;
  settled: number;
  already_settled: number;
  /** Every line that is neither settled nor already settled. */
  failed: number;
  codes: Partial<Record<SettleErrorCode, number>>;
}

/** A line of the answer: each escrow's result, then the summary, or the error that stopped the batch. */
export type BatchSettleLine =
  | SettleLine
  | { summary: SettleSummary }
  | { error: { code: 'internal_error'; message: string } };

// --- GET /v1/admin/summary (admin/summary-routes.ts) ---

/** One model's funds: locked, balance estimates, and the spent / fees / returned split. */
export interface ModelFunds {
  model_id: string;
  escrows: number;
  /** Escrows in the pool with status active. */
  serving: number;
  locked: string;
  balance: string;
  spent: string;
  fees: string;
  returned: string;
}

/** A settled escrow's split, from its settle event. */
export interface SettledEscrowSplit {
  escrow_id: number;
  spent: string;
  fees: string;
  returned: string;
}

/** The running totals of a model's funds at one time (a step of funds_history). */
export interface FundsPoint {
  at: string;
  locked: string;
  spent: string;
  fees: string;
  returned: string;
}

export interface ModelFundsHistory {
  model_id: string;
  points: FundsPoint[];
}

/** One proxy replica's /metrics as read for this summary; the counters are absent when it did not answer. */
export interface ReplicaTraffic {
  replica_id: string;
  url: string;
  ok: boolean;
  error: string | null;
  requests_total?: number;
  errors_total?: number;
  in_flight?: number;
  requests_per_s?: number | null;
  errors_per_s?: number | null;
}

export interface Traffic {
  replicas: ReplicaTraffic[];
  /** Seconds since the previous read; null on the first read (no rate yet). */
  window_s: number | null;
  requests_per_s: number;
  errors_per_s: number;
  in_flight: number;
  /** The window's host calls, or with none in it, every one since the replicas started. */
  latency_over: 'window' | 'since_start';
  upstream_p50_ms: number | null;
  upstream_p99_ms: number | null;
  first_token_p50_ms: number | null;
  first_token_p99_ms: number | null;
}

/** How fast an escrow's balance estimate fell over the last minutes of reads. */
export interface EscrowBurn {
  escrow_id: number;
  balance: string;
  /** ngonka per second. */
  burn_per_s: number;
  seconds_to_depletion: number | null;
}

export interface AdminSummary {
  generated_at: string;
  /** Null while the node does not answer. */
  chain_id: string | null;
  funds: ModelFunds[];
  settlements: SettledEscrowSplit[];
  /** Per model, the running totals at each registration and settle, and at the read. */
  funds_history: ModelFundsHistory[];
  traffic: Traffic;
  burn: EscrowBurn[];
}

// --- /v1/admin/keys (keys/key-store.ts) ---

/** The budget periods of shared db/schema.ts BUDGET_PERIODS, kept equal by admin-api.test.ts. */
export type KeyBudgetPeriod = 'daily' | 'weekly' | 'monthly' | 'total';

export interface KeyLimits {
  models: string[] | null;
  budget_ngonka: string | null;
  budget_period: KeyBudgetPeriod;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  expires_at: string | null;
}

/** An API key as listed: never the key itself, only its prefix (docs/keys-and-usage.md, "Keys"). */
export interface KeyView extends KeyLimits {
  id: string;
  name: string;
  prefix: string;
  read_only: boolean;
  status: 'active' | 'revoked' | 'expired';
  metadata: Record<string, unknown>;
  period: { start: string; end: string | null };
  spend_ngonka: string;
  budget_remaining_ngonka: string | null;
  last_used_at: string | null;
  created_at: string | null;
  rotated_at: string | null;
  revoked_at: string | null;
}

/** The answer of a create or rotate: the only time the key is shown. */
export interface KeyWithSecret extends KeyView {
  key: string;
}

// --- GET /v1/admin/usage (usage/ledger-query.ts) ---

/** What the usage totals can be grouped by (ledger-query.ts GROUP_BY). */
export type UsageGroupBy = 'key' | 'model' | 'escrow' | 'day';

export interface LedgerTotals {
  group: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_ngonka: string;
  errors: number;
  /** Rows still at their reservation (the Finish not yet applied). */
  unfinalized: number;
}

export interface UsageTotals {
  group_by: UsageGroupBy | null;
  /** One row per group; empty without group_by. */
  data: LedgerTotals[];
  total: LedgerTotals;
}

// --- GET/POST /v1/admin/settings (admin/settings-routes.ts) ---

/** One model of settings.escrow_rotation as the row stores it (spec §2.5). */
export interface StoredRotationModel {
  model_id: string;
  temp_count: number;
  target_count: number;
  amount: string | number;
  private_key_env: string;
  /** The per-model switch for rotation settlement: false = rotated-out escrows are only finalized. */
  settle?: boolean;
}

export interface StoredRotation {
  enabled: boolean;
  pre_poc_blocks: number;
  models: StoredRotationModel[];
}

/** A rotated model as the settings answer shows it: the amount a decimal string, settle filled in. */
export interface RotationModelView extends StoredRotationModel {
  amount: string;
  settle: boolean;
}

export interface AdminSettings {
  revision: string;
  default_request_max_tokens: number;
  request_max_tokens_cap: number;
  model_limits: { model_id: string; access_mode: 'admin_only' | 'api_key' }[];
  passthrough_parameters: string[];
  escrow_rotation: { enabled: boolean; pre_poc_blocks: number; models: RotationModelView[] };
  disabled: { enabled: boolean; message: string; new_url: string | null };
}

// --- GET /v1/admin/hosts (admin/hosts-routes.ts) ---

/** A (participant, model) serving health record; a quarantine past its end shows as probation. */
export interface HostView {
  participant: string;
  model: string;
  /** shared redis/host-health.ts HOST_HEALTH_STATES, kept equal by admin-api.test.ts. */
  state: 'healthy' | 'probation' | 'quarantined';
  quarantined_until: string | null;
  times_quarantined: number;
  consecutive_failures: number;
  last_error: string | null;
  last_error_at: string | null;
  receipt_ms: number | null;
  first_token_ms: number | null;
  tokens_per_s: number | null;
  /** Per counter of shared redis/host-health.ts HOST_COUNTERS. */
  counters: Readonly<Record<string, number>>;
  updated_at: string | null;
  lifted_at: string | null;
}

// --- GET /v1/debug/rotation (admin/debug-routes.ts; spec §2.8, §3.4) ---

/** Where the chain is in its epoch, from the public node. */
export interface RotationChainPosition {
  block_height: number;
  epoch_index: number;
  latest_epoch_index: number;
  phase: string;
  poc_active: boolean;
  blocks_to_epoch_switch: number;
  /** The bridge stage starts pre_poc_blocks before the switch (spec §2.5). */
  blocks_until_next_rotation: number;
  planned_stage: string;
}

/** A creator's funding against what the rotated models need (spec §3.4 funding rule). */
export interface CreatorFunding {
  creator: string;
  private_key_env: string;
  models: string[];
  spendable: string;
  required: string;
  ok: boolean;
}

/** A model's latest rotation stage as the tick recorded it; `idle` before the tick handled it. */
export interface ModelRotationStage {
  stage: string;
  status: string | null;
  epoch: number | null;
  role: string | null;
  target: number;
  existing: number;
  created: number;
  promoted: number;
  settled: number;
  failed: number;
  retiring: number[];
  last_error: string | null;
  updated_at: string | null;
  suppressed: { role: string; epoch: number; error: string; at: string }[];
  /** The recent markers, each with its recorded detail fields. */
  events: ({ marker: string; epoch: number | null; at: string } & Record<
    string,
    string | number | boolean | null
  >)[];
}

/** An unsettled escrow's settle window and retire-by height (upkeep/retire-by.ts). */
export interface EscrowSettleWindow {
  escrow_id: number;
  model_id: string;
  role: string;
  state: string;
  epoch: number;
  amount: string;
  execution_timeout_s: number;
  /** Null once the window closed. */
  window_closes_at: number | null;
  retire_by_height: number | null;
  reserve_blocks: number | null;
  reserve_capped: boolean | null;
  past_retire_by: boolean;
}

export interface SettleWindowReport {
  block_time_ms: number | null;
  block_time_over_blocks: number | null;
  tick_ms: number;
  margin_ms: number;
  epoch_length: number;
  escrows: EscrowSettleWindow[];
  /** The escrows whose window closed unsettled. */
  closed_unsettled: { escrow_id: number; model_id: string; epoch: number; state: string; amount: string }[];
  closed_unsettled_amount: string;
}

export interface RotationReport {
  enabled: boolean;
  chain: RotationChainPosition | { error: string };
  settings: StoredRotation;
  funding: CreatorFunding[] | { error: string };
  settle_window: SettleWindowReport | { error: string };
  /** Per model listed in escrow_rotation.models. */
  latest: Record<string, ModelRotationStage>;
}
