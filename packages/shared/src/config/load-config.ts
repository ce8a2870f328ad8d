import { hostname } from 'node:os';
import { PrivateKey } from '@gonka-gateway/chain';
import { ConfigValueError } from './parsers.js';
import type { PreregisteredEscrow } from './preregistered-escrows.js';
import { type PocRequestMode, VARIABLES, type VariableName, type VariableSpec } from './variables.js';

/** A configuration problem, reported as one line naming the variable; exits the process at start. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type EscrowMode =
  | { kind: 'multi'; preregistered: PreregisteredEscrow[] }
  | { kind: 'single'; escrowId: bigint };

/** The serve stage's deadlines, hedge budget and host-health rules (GATEWAY_* variables). */
export interface ServingConfig {
  maxAttempts: number;
  receiptTimeoutMs: number;
  firstTokenTimeoutMs: number;
  streamStallTimeoutMs: number;
  hedgeBudgetPercent: number;
  hedgeMinPerMinute: number;
  quarantineAfter: number;
  quarantineMs: number;
  quarantineMaxMs: number;
  maxQuarantinedPercent: number;
}

export interface GatewayConfig {
  instanceName: string;
  /** The default creator key; redacts itself in logs and JSON. */
  creatorKey: PrivateKey | undefined;
  /** SHA-256 digests of the configured keys; plain keys are not kept. */
  userKeyHashes: Buffer[];
  adminKeyHash: Buffer;
  escrowMode: EscrowMode;
  chain: { restUrl: string; txQueryRestUrl: string; publicApiUrl: string; gasLimit: bigint };
  pocRequestMode: PocRequestMode;
  capacityAwareLimits: boolean;
  defaultModel: string;
  limits: { maxConcurrentRequests: number; maxInputTokensInFlight: number };
  /** Settings written to the database on its first start only (spec §2.6). */
  bootstrapSettings: {
    defaultRequestMaxTokens: number;
    requestMaxTokensCap: number;
    disabled: { enabled: boolean; message: string; newUrl: string | null };
  };
  storageDir: string;
  storageHostDir: string;
  databaseUrl: string;
  redis: { url: string; keyPrefix: string };
  listenHost: string;
  proxy: {
    port: number;
    internalUrl: string;
    replicaId: string;
    /** Escrow lease TTL of the ownership runtime (architecture §5). */
    leaseTtlMs: number;
    /** Idle time after which an owned escrow's pending host txs are flushed on their own. */
    flushIdleMs: number;
    /** Lifetime of a fleet-wide admission entry without a refresh. */
    admissionTtlMs: number;
    /**
     * Chat parameters passed to the hosts without a rule (apps/proxy chat/request-policy.ts): the
     * base list, to which settings.passthrough_parameters adds (apps/proxy gate/settings.ts).
     */
    passthroughParameters: string[];
    /** Accept hosts on loopback/private addresses (devnet only). */
    allowPrivateHosts: boolean;
    /** Deadlines, hedged attempts and host health of the serve stage (apps/proxy/src/serve/). */
    serving: ServingConfig;
  };
  controller: {
    port: number;
    url: string;
    /** Rotation tick period (spec §3.4, §8: about every 15 s); tests run it faster. */
    rotationTickMs: number;
    /** How long a broadcast tx's hash is polled before its outcome is unknown (chain-and-network.md §2.4). */
    txPollTimeoutMs: number;
    /** BullMQ worker lock and stalled-job check period (jobs/queues.ts workerLocks). */
    jobLockMs: number;
    /** Room kept before a settle window closes for finalize and the settle tx (upkeep/retire-by.ts). */
    settleMarginMs: number;
  };
  encryptionKey: Buffer | undefined;
  logLevel: string;
}

type Env = Readonly<Record<string, string | undefined>>;
type Parsed<K extends VariableName> = (typeof VARIABLES)[K] extends VariableSpec<infer T> ? T : never;

/** The raw value, or the default; an empty value counts as unset (common in env files). */
function raw(env: Env, name: VariableName): string | undefined {
  const value = env[name];
  if (value !== undefined && value.trim() !== '') return value;
  return (VARIABLES[name] as VariableSpec<unknown>).default;
}

function read<K extends VariableName>(env: Env, name: K): Parsed<K> | undefined {
  const s = VARIABLES[name] as VariableSpec<Parsed<K>>;
  const value = raw(env, name);
  if (value === undefined) {
    if (s.required) throw new ConfigError(`${name} is required: ${s.meaning}`);
    return undefined;
  }
  try {
    return s.parse(value);
  } catch (err) {
    if (err instanceof ConfigValueError) throw new ConfigError(`${name} ${err.message}`);
    throw err;
  }
}

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('variable with a default resolved to undefined');
  return value;
}

function escrowMode(env: Env): EscrowMode {
  const list = read(env, 'DEVSHARDS_JSON');
  const single = read(env, 'DEVSHARD_ESCROW_ID');
  if (list !== undefined && single !== undefined) {
    throw new ConfigError(
      'DEVSHARDS_JSON and DEVSHARD_ESCROW_ID are both set: set DEVSHARDS_JSON for multi-escrow mode or DEVSHARD_ESCROW_ID for single-escrow mode, not both',
    );
  }
  if (list !== undefined) return { kind: 'multi', preregistered: list };
  if (single !== undefined) return { kind: 'single', escrowId: single };
  throw new ConfigError(
    'neither DEVSHARDS_JSON nor DEVSHARD_ESCROW_ID is set: set DEVSHARDS_JSON=[] for multi-escrow mode, or DEVSHARD_ESCROW_ID=<id> for single-escrow mode',
  );
}

/** Parses and validates the whole configuration once, at start. Throws ConfigError (one line). */
export function loadConfig(env: Env = process.env): GatewayConfig {
  const privateKeyHex = read(env, 'DEVSHARD_PRIVATE_KEY');
  let creatorKey: PrivateKey | undefined;
  if (privateKeyHex !== undefined) {
    try {
      creatorKey = PrivateKey.fromHex(privateKeyHex);
    } catch {
      throw new ConfigError('DEVSHARD_PRIVATE_KEY is not a valid secp256k1 private key');
    }
  }
  const defaultMaxTokens = must(read(env, 'GATEWAY_DEFAULT_MAX_TOKENS'));
  const maxTokensCap = must(read(env, 'GATEWAY_MAX_TOKENS_CAP'));
  if (defaultMaxTokens > maxTokensCap) {
    throw new ConfigError(
      `GATEWAY_DEFAULT_MAX_TOKENS (${defaultMaxTokens}) must not exceed GATEWAY_MAX_TOKENS_CAP (${maxTokensCap})`,
    );
  }
  const disabled = must(read(env, 'DEVSHARD_GATEWAY_DISABLED'));
  const newUrl = read(env, 'DEVSHARD_GATEWAY_DISABLED_NEW_URL') ?? null;
  if (disabled && newUrl === null) {
    throw new ConfigError(
      'DEVSHARD_GATEWAY_DISABLED_NEW_URL is required when DEVSHARD_GATEWAY_DISABLED is on',
    );
  }
  const restUrl = must(read(env, 'DEVSHARD_CHAIN_REST'));
  const proxyPort = must(read(env, 'DEVSHARD_PORT'));
  const controllerPort = must(read(env, 'GATEWAY_CONTROLLER_PORT'));
  const encryptionKeyHex = read(env, 'GATEWAY_ENCRYPTION_KEY');
  return {
    instanceName: must(read(env, 'DEVSHARD_INSTANCE_NAME')),
    creatorKey,
    userKeyHashes: read(env, 'DEVSHARD_API_KEYS') ?? [],
    adminKeyHash: must(read(env, 'DEVSHARD_ADMIN_API_KEY')),
    escrowMode: escrowMode(env),
    chain: {
      restUrl,
      txQueryRestUrl: read(env, 'DEVSHARD_TX_QUERY_REST') ?? restUrl,
      publicApiUrl: must(read(env, 'DEVSHARD_PUBLIC_API')),
      gasLimit: must(read(env, 'DEVSHARD_TX_GAS_LIMIT')),
    },
    pocRequestMode: must(read(env, 'DEVSHARD_POC_REQUEST_MODE')),
    capacityAwareLimits: must(read(env, 'DEVSHARD_CAPACITY_AWARE_LIMITS')),
    defaultModel: must(read(env, 'DEVSHARD_MODEL')),
    limits: {
      maxConcurrentRequests: must(read(env, 'GATEWAY_MAX_CONCURRENT_REQUESTS')),
      maxInputTokensInFlight: must(read(env, 'GATEWAY_MAX_INPUT_TOKENS_IN_FLIGHT')),
    },
    bootstrapSettings: {
      defaultRequestMaxTokens: defaultMaxTokens,
      requestMaxTokensCap: maxTokensCap,
      disabled: { enabled: disabled, message: must(read(env, 'DEVSHARD_GATEWAY_DISABLED_MESSAGE')), newUrl },
    },
    storageDir: must(read(env, 'DEVSHARD_STORAGE_DIR')),
    storageHostDir: must(read(env, 'DEVSHARD_STORAGE_HOST_DIR')),
    databaseUrl: must(read(env, 'DATABASE_URL')),
    redis: { url: must(read(env, 'REDIS_URL')), keyPrefix: must(read(env, 'REDIS_KEY_PREFIX')) },
    listenHost: must(read(env, 'GATEWAY_LISTEN_HOST')),
    proxy: {
      port: proxyPort,
      internalUrl: read(env, 'GATEWAY_PROXY_INTERNAL_URL') ?? `http://127.0.0.1:${proxyPort}`,
      replicaId: read(env, 'GATEWAY_REPLICA_ID') ?? `${hostname()}-${proxyPort}`,
      leaseTtlMs: must(read(env, 'GATEWAY_LEASE_TTL_MS')),
      flushIdleMs: must(read(env, 'GATEWAY_FLUSH_IDLE_MS')),
      admissionTtlMs: must(read(env, 'GATEWAY_ADMISSION_TTL_MS')),
      passthroughParameters: must(read(env, 'GATEWAY_PASSTHROUGH_PARAMETERS')),
      allowPrivateHosts: must(read(env, 'GATEWAY_ALLOW_PRIVATE_HOSTS')),
      serving: {
        maxAttempts: must(read(env, 'GATEWAY_MAX_ATTEMPTS')),
        receiptTimeoutMs: must(read(env, 'GATEWAY_RECEIPT_TIMEOUT_MS')),
        firstTokenTimeoutMs: must(read(env, 'GATEWAY_FIRST_TOKEN_TIMEOUT_MS')),
        streamStallTimeoutMs: must(read(env, 'GATEWAY_STREAM_STALL_TIMEOUT_MS')),
        hedgeBudgetPercent: must(read(env, 'GATEWAY_HEDGE_BUDGET_PERCENT')),
        hedgeMinPerMinute: must(read(env, 'GATEWAY_HEDGE_MIN_PER_MINUTE')),
        quarantineAfter: must(read(env, 'GATEWAY_HOST_QUARANTINE_AFTER')),
        quarantineMs: must(read(env, 'GATEWAY_HOST_QUARANTINE_MS')),
        quarantineMaxMs: must(read(env, 'GATEWAY_HOST_QUARANTINE_MAX_MS')),
        maxQuarantinedPercent: must(read(env, 'GATEWAY_HOST_MAX_QUARANTINED_PERCENT')),
      },
    },
    controller: {
      port: controllerPort,
      url: read(env, 'GATEWAY_CONTROLLER_URL') ?? `http://127.0.0.1:${controllerPort}`,
      rotationTickMs: must(read(env, 'GATEWAY_ROTATION_TICK_MS')),
      txPollTimeoutMs: must(read(env, 'GATEWAY_TX_POLL_TIMEOUT_MS')),
      jobLockMs: must(read(env, 'GATEWAY_JOB_LOCK_MS')),
      settleMarginMs: must(read(env, 'GATEWAY_SETTLE_MARGIN_MS')),
    },
    encryptionKey: encryptionKeyHex === undefined ? undefined : Buffer.from(encryptionKeyHex, 'hex'),
    logLevel: must(read(env, 'LOG_LEVEL')),
  };
}

/** The secret values present in `env`, so the logger can scrub them from any line. */
export function secretValues(env: Env = process.env): string[] {
  const out: string[] = [];
  for (const [name, s] of Object.entries(VARIABLES) as Array<[VariableName, VariableSpec<unknown>]>) {
    const value = env[name]?.trim();
    if (!s.secret || !value) continue;
    if (name === 'DEVSHARD_API_KEYS') out.push(...value.split(',').map((k) => k.trim()));
    else if (name === 'DATABASE_URL' || name === 'REDIS_URL') {
      const password = safePassword(value);
      if (password) out.push(password);
    } else out.push(value, value.replace(/^0x/i, ''));
  }
  return out.filter((v) => v.length >= 8);
}

function safePassword(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}
