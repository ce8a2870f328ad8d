// Every environment variable the gateway reads: spec §2.10 plus what the split design needs
// (architecture.md §1). The README's configuration table is generated from this list
// (`pnpm tsx scripts/config-table.ts`), so defaults and meanings cannot drift apart.
import { parseAdminKey, parseUserKeys } from './api-keys.js';
import {
  hexBytes,
  httpUrl,
  nonEmpty,
  nonNegativeInt,
  oneOf,
  onOff,
  parameterNames,
  port,
  positiveInt,
  uint64,
  urlWithScheme,
} from './parsers.js';
import { parsePreregisteredEscrows } from './preregistered-escrows.js';

export interface VariableSpec<T> {
  /** Default as written in an env file; undefined = no default (optional or required, see below). */
  default?: string;
  required?: boolean;
  /** Secret values are never echoed in errors, logs or the config table. */
  secret?: boolean;
  meaning: string;
  parse: (raw: string) => T;
}

const spec = <T>(s: VariableSpec<T>) => s;

export const POC_REQUEST_MODES = ['off', 'relaxed'] as const;
export type PocRequestMode = (typeof POC_REQUEST_MODES)[number];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const VARIABLES = {
  DEVSHARD_PRIVATE_KEY: spec({
    secret: true,
    meaning:
      'Escrow creator private key: 64 hex characters, no 0x. Dedicated wallet; its address must be on the chain allowlist. Optional when every escrow names its own key variable.',
    parse: hexBytes(32),
  }),
  DEVSHARD_API_KEYS: spec({
    secret: true,
    default: '',
    meaning: 'User API keys, comma-separated; each `sk-` plus 48 hex characters (`pnpm gwctl keys new`).',
    parse: parseUserKeys,
  }),
  DEVSHARD_ADMIN_API_KEY: spec({
    secret: true,
    required: true,
    meaning: 'Admin API key: `sk-admin-` plus 48 hex characters.',
    parse: parseAdminKey,
  }),
  DEVSHARD_INSTANCE_NAME: spec({ default: 'devshardctl-multi', meaning: 'Instance name.', parse: nonEmpty }),
  DEVSHARDS_JSON: spec({
    meaning:
      'JSON array of pre-registered escrows `[{"escrow_id":1,"model_id":"…","active":true,"private_key_env":"…"}]`; `[]` for multi-escrow mode. Set this or DEVSHARD_ESCROW_ID.',
    parse: parsePreregisteredEscrows,
  }),
  DEVSHARD_ESCROW_ID: spec({
    meaning: 'Single-escrow mode: the escrow id. Set this or DEVSHARDS_JSON.',
    parse: uint64,
  }),
  DEVSHARD_CHAIN_REST: spec({
    default: 'http://127.0.0.1:1317',
    meaning: 'Chain REST (LCD) base URL.',
    parse: httpUrl,
  }),
  DEVSHARD_TX_QUERY_REST: spec({
    meaning: 'Chain REST base for transaction queries; defaults to DEVSHARD_CHAIN_REST.',
    parse: httpUrl,
  }),
  DEVSHARD_PUBLIC_API: spec({
    default: 'http://127.0.0.1:9000',
    meaning: 'Public node base URL; also the source of live epoch/phase data.',
    parse: httpUrl,
  }),
  DEVSHARD_PORT: spec({
    default: '8080',
    meaning: 'Port the proxy (client-facing API) listens on.',
    parse: port,
  }),
  DEVSHARD_STORAGE_DIR: spec({
    default: '/root/.devshardctl',
    meaning:
      'State directory for local exports (a copy of every finalize document). Postgres is the system of record.',
    parse: nonEmpty,
  }),
  DEVSHARD_STORAGE_HOST_DIR: spec({
    default: '.devshardctl',
    meaning: 'Host directory mounted at DEVSHARD_STORAGE_DIR (deploy/ compose file only).',
    parse: nonEmpty,
  }),
  DEVSHARD_MODEL: spec({
    default: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
    meaning: 'Default model for requests that name none and for new escrows.',
    parse: nonEmpty,
  }),
  GATEWAY_MAX_CONCURRENT_REQUESTS: spec({
    default: '512',
    meaning: 'Chat requests in flight across all proxy replicas; 0 = no limit.',
    parse: nonNegativeInt,
  }),
  GATEWAY_MAX_INPUT_TOKENS_IN_FLIGHT: spec({
    default: '0',
    meaning: 'Estimated input tokens in flight across all replicas; 0 = no limit.',
    parse: nonNegativeInt,
  }),
  GATEWAY_DEFAULT_MAX_TOKENS: spec({
    default: '3072',
    meaning: 'max_tokens for requests that set none (bootstraps settings on first start).',
    parse: positiveInt,
  }),
  GATEWAY_MAX_TOKENS_CAP: spec({
    default: '4096',
    meaning: 'Upper cap on max_tokens (bootstraps settings on first start).',
    parse: positiveInt,
  }),
  DEVSHARD_TX_GAS_LIMIT: spec({
    default: '700000',
    meaning: 'Gas limit per chain transaction.',
    parse: uint64,
  }),
  DEVSHARD_POC_REQUEST_MODE: spec({
    default: 'relaxed',
    meaning: '`relaxed`: serve while the network runs PoC; `off`: block new chat requests during PoC.',
    parse: oneOf(POC_REQUEST_MODES),
  }),
  DEVSHARD_CAPACITY_AWARE_LIMITS: spec({
    default: 'on',
    meaning: '`on`: weight escrow selection by host capacity; `off`: by in-flight count only.',
    parse: onOff,
  }),
  DEVSHARD_GATEWAY_DISABLED: spec({
    default: 'off',
    meaning: 'First start only: bootstrap the disabled state (308 redirect of non-admin routes).',
    parse: onOff,
  }),
  DEVSHARD_GATEWAY_DISABLED_MESSAGE: spec({
    default: '',
    meaning: 'First start only: message returned to redirected clients.',
    parse: (raw: string) => raw,
  }),
  DEVSHARD_GATEWAY_DISABLED_NEW_URL: spec({
    meaning: 'First start only: where redirected clients should go (required when disabled).',
    parse: httpUrl,
  }),
  DATABASE_URL: spec({
    secret: true,
    default: 'postgres://postgres@127.0.0.1:5432/gonka_gateway',
    meaning:
      'Postgres URL (system of record). The controller creates the database if it is missing. ' +
      'A Unix socket: ?host=/var/run/postgresql (a directory).',
    parse: urlWithScheme(['postgres', 'postgresql']),
  }),
  REDIS_URL: spec({
    secret: true,
    default: 'redis://127.0.0.1:6379',
    meaning:
      'Redis URL (pool state, leases, limiter, queues). A Unix socket: unix:///run/redis/redis.sock?db=0.',
    parse: urlWithScheme(['redis', 'rediss', 'unix']),
  }),
  REDIS_KEY_PREFIX: spec({
    default: 'gw:',
    meaning: 'Prefix of every Redis key and BullMQ queue of this gateway.',
    parse: nonEmpty,
  }),
  GATEWAY_LISTEN_HOST: spec({
    default: '127.0.0.1',
    meaning: 'Address the proxy and controller bind (0.0.0.0 inside a container).',
    parse: nonEmpty,
  }),
  GATEWAY_PROXY_INTERNAL_URL: spec({
    meaning: 'URL other replicas use to reach this proxy; defaults to http://127.0.0.1:DEVSHARD_PORT.',
    parse: httpUrl,
  }),
  GATEWAY_REPLICA_ID: spec({
    meaning: 'Unique id of this proxy replica; defaults to hostname-port.',
    parse: nonEmpty,
  }),
  GATEWAY_LEASE_TTL_MS: spec({
    default: '10000',
    meaning:
      'Escrow lease lifetime (ms). The owner renews its leases well within it, and another replica takes over an escrow whose owner stopped renewing once it ran out; claim and renewal run every third of it. Shorter: faster failover after a crash, more Redis traffic, and a replica stalled that long loses its escrows.',
    parse: positiveInt,
  }),
  GATEWAY_FLUSH_IDLE_MS: spec({
    default: '10000',
    meaning:
      'Pending host transactions of an owned escrow are sent in a diff of their own once it has had no request for this long (ms). Shorter: host receipts reach the escrow sooner on quiet escrows, at the cost of more diffs.',
    parse: positiveInt,
  }),
  GATEWAY_ADMISSION_TTL_MS: spec({
    default: '15000',
    meaning:
      "How long (ms) a chat request's fleet-wide admission entry outlives a replica that stopped refreshing it (crashed); refreshed every third of it. Shorter: a dead replica's slots come back sooner, more Redis writes.",
    parse: positiveInt,
  }),
  GATEWAY_PASSTHROUGH_PARAMETERS: spec({
    default: '',
    meaning:
      'Top-level chat parameters the proxy passes to the hosts without a rule of its own, besides `chat_template_kwargs` (apps/proxy README, "Request policy"): names separated by commas, the base list of the deployment. `passthrough_parameters` in POST /v1/admin/settings adds names without a restart. Any other parameter the gateway does not know is refused with a 400 naming it; a parameter it knows keeps its rule.',
    parse: parameterNames,
  }),
  GATEWAY_MAX_ATTEMPTS: spec({
    default: '3',
    meaning:
      'Attempts (nonces that run an inference) one chat request may use: the first plus hedged attempts started when an attempt misses its receipt or first-token deadline or fails before its first content. Each extra attempt goes to another participant and costs a nonce; see the proxy README "Deadlines, hedged attempts and host health".',
    parse: positiveInt,
  }),
  GATEWAY_RECEIPT_TIMEOUT_MS: spec({
    default: '5000',
    meaning:
      "How long (ms) an attempt waits for its host's receipt event before a hedged attempt starts on another participant; 1 s more per 32,000 input tokens. The late attempt keeps running: the first to stream content wins.",
    parse: positiveInt,
  }),
  GATEWAY_FIRST_TOKEN_TIMEOUT_MS: spec({
    default: '6000',
    meaning:
      "First-token deadline (ms, after the receipt) while a model and input-size bucket has fewer than 20 recent successful attempts; 1 s more per 10,000 input tokens. With enough samples the deadline is learned: 2 × their p99 + 500 ms, between 1 s and this value's 3×. Missing it starts a hedged attempt.",
    parse: positiveInt,
  }),
  GATEWAY_STREAM_STALL_TIMEOUT_MS: spec({
    default: '20000',
    meaning:
      'Longest gap (ms) between two chunks of an answer that has started. A streamed answer that stalls ends with an error event and [DONE]; a non-streamed one is retried on another participant.',
    parse: positiveInt,
  }),
  GATEWAY_HEDGE_BUDGET_PERCENT: spec({
    default: '10',
    meaning:
      'Extra attempts allowed as a share (percent) of chat requests, on top of GATEWAY_HEDGE_MIN_PER_MINUTE: a token bucket that stops hedging and retries when failures pile up, so a broken network cannot multiply spending.',
    parse: nonNegativeInt,
  }),
  GATEWAY_HEDGE_MIN_PER_MINUTE: spec({
    default: '20',
    meaning:
      'Extra attempts per minute per replica allowed whatever the request rate (the hedge budget floor).',
    parse: nonNegativeInt,
  }),
  GATEWAY_HOST_QUARANTINE_AFTER: spec({
    default: '1',
    meaning:
      'Consecutive failed attempts (receipt or first-token deadline missed, stall, cut stream, empty answer, error event, 429/503/5xx, unreachable) after which a participant is quarantined for a model, fleet-wide: its nonces are spent fee-only instead of carrying requests.',
    parse: positiveInt,
  }),
  GATEWAY_HOST_QUARANTINE_MS: spec({
    default: '30000',
    meaning:
      'First quarantine of a participant (ms); each further one doubles it up to GATEWAY_HOST_QUARANTINE_MAX_MS. After it a single real request probes the host (probation): success makes it healthy, failure quarantines it again.',
    parse: positiveInt,
  }),
  GATEWAY_HOST_QUARANTINE_MAX_MS: spec({
    default: '600000',
    meaning: 'Longest quarantine (ms).',
    parse: positiveInt,
  }),
  GATEWAY_HOST_MAX_QUARANTINED_PERCENT: spec({
    default: '34',
    meaning:
      "Largest share (percent of an escrow's slots) whose nonces are skipped for quarantine; beyond it the least-failing quarantined participants are still sent requests, so a fault of the gateway itself cannot empty an escrow in fees.",
    parse: nonNegativeInt,
  }),
  GATEWAY_ALLOW_PRIVATE_HOSTS: spec({
    default: 'off',
    meaning:
      '`off`: refuse hosts whose chain-registered URL is a loopback, link-local or private address, so a registered host cannot make the gateway call into its own network. `on`: allow them; only for a local devnet whose hosts listen on loopback.',
    parse: onOff,
  }),
  GATEWAY_CONTROLLER_PORT: spec({ default: '8081', meaning: 'Port the controller listens on.', parse: port }),
  GATEWAY_CONTROLLER_URL: spec({
    meaning:
      'Controller URL the proxy forwards admin routes to; defaults to http://127.0.0.1:GATEWAY_CONTROLLER_PORT.',
    parse: httpUrl,
  }),
  GATEWAY_TX_POLL_TIMEOUT_MS: spec({
    default: '45000',
    meaning:
      "How long (ms) the controller polls a broadcast transaction's hash before its outcome counts as unknown (chain-and-network.md §2.4: every 2 s for up to ~45 s); an unknown outcome is reconciled by hash later, never sent again. Shorter: an admin call answers 504 sooner when the tx index is slow.",
    parse: positiveInt,
  }),
  GATEWAY_JOB_LOCK_MS: spec({
    default: '15000',
    meaning:
      "Lock (ms) a controller's job worker holds on the job it runs, renewed every half of it, and the period of the check for jobs whose lock lapsed: a job of a controller that died is run again by a live one within about twice this. Shorter: faster recovery after a crash, more Redis traffic.",
    parse: positiveInt,
  }),
  GATEWAY_ROTATION_TICK_MS: spec({
    default: '15000',
    meaning:
      "Period (ms) of the controller's escrow rotation tick (spec §3.4, about every 15 s) and a third of it for the chain-phase poll. Shorter: rotation reacts sooner to the epoch schedule, more node queries.",
    parse: positiveInt,
  }),
  GATEWAY_SETTLE_MARGIN_MS: spec({
    default: '120000',
    meaning:
      "Time (ms) a rotated escrow keeps for its finalize rounds and settle tx before its settle window closes (chain-and-network.md §2.6 rule 9). The controller retires it by the window's close − (its execution_timeout + 5 s clock skew + this + one rotation tick), converted to blocks with its block time estimate, whatever the rotation stage. Longer: escrows are retired earlier; shorter: less room for a slow finalize.",
    parse: positiveInt,
  }),
  GATEWAY_ENCRYPTION_KEY: spec({
    secret: true,
    meaning:
      'AES-256-GCM key (64 hex) that encrypts private keys given in request bodies before they are stored. Without it, such requests are refused.',
    parse: hexBytes(32),
  }),
  LOG_LEVEL: spec({ default: 'info', meaning: 'pino log level.', parse: oneOf(LOG_LEVELS) }),
} satisfies Record<string, VariableSpec<unknown>>;

export type VariableName = keyof typeof VARIABLES;
