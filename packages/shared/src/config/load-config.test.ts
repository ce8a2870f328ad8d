import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { matchesKeyHash } from './api-keys.js';
import { ConfigError, loadConfig, secretValues } from './load-config.js';
import { VARIABLES } from './variables.js';

const PRIVATE_KEY = '10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce';
const ADMIN = `sk-admin-${'ab'.repeat(24)}`;
const USER1 = `sk-${'cd'.repeat(24)}`;
const USER2 = `sk-${'ef'.repeat(24)}`;
const base = { DEVSHARD_ADMIN_API_KEY: ADMIN, DEVSHARDS_JSON: '[]' };

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error('expected a configuration error');
}

describe('loadConfig defaults', () => {
  it('applies the reference defaults of spec §2.10', () => {
    const c = loadConfig(base);
    expect(c.instanceName).toBe('devshardctl-multi');
    expect(c.proxy.port).toBe(8080);
    expect(c.storageDir).toBe('/root/.devshardctl');
    expect(c.storageHostDir).toBe('.devshardctl');
    expect(c.limits).toEqual({ maxConcurrentRequests: 512, maxInputTokensInFlight: 0 });
    expect(c.bootstrapSettings.defaultRequestMaxTokens).toBe(3072);
    expect(c.bootstrapSettings.requestMaxTokensCap).toBe(4096);
    expect(c.chain.gasLimit).toBe(700_000n);
    expect(c.pocRequestMode).toBe('relaxed');
    expect(c.capacityAwareLimits).toBe(true);
    expect(c.chain.txQueryRestUrl).toBe(c.chain.restUrl);
    expect(c.controller.url).toBe('http://127.0.0.1:8081');
    expect(c.proxy.internalUrl).toBe('http://127.0.0.1:8080');
    expect(c.escrowMode).toEqual({ kind: 'multi', preregistered: [] });
    expect(c.creatorKey).toBeUndefined();
    expect(c.userKeyHashes).toEqual([]);
  });

  it('defaults the proxy knobs to production values: 10 s lease and idle flush, 15 s admission, private hosts refused', () => {
    const { leaseTtlMs, flushIdleMs, admissionTtlMs, allowPrivateHosts } = loadConfig(base).proxy;
    expect({ leaseTtlMs, flushIdleMs, admissionTtlMs, allowPrivateHosts }).toEqual({
      leaseTtlMs: 10_000,
      flushIdleMs: 10_000,
      admissionTtlMs: 15_000,
      allowPrivateHosts: false,
    });
  });

  it('every variable has a meaning, and every default parses', () => {
    for (const [name, s] of Object.entries(VARIABLES)) {
      expect(s.meaning.length, name).toBeGreaterThan(10);
      if (s.default !== undefined && s.default !== '') expect(() => s.parse(s.default!), name).not.toThrow();
    }
  });
});

describe('escrow mode (spec §7)', () => {
  it('exits with a message naming both variables when neither is set', () => {
    const message = errorOf({ DEVSHARD_ADMIN_API_KEY: ADMIN });
    expect(message).toContain('DEVSHARDS_JSON=[]');
    expect(message).toContain('DEVSHARD_ESCROW_ID');
  });

  it('treats an empty value as unset', () => {
    expect(errorOf({ DEVSHARD_ADMIN_API_KEY: ADMIN, DEVSHARDS_JSON: '', DEVSHARD_ESCROW_ID: ' ' })).toContain(
      'neither',
    );
  });

  it('refuses both at once', () => {
    expect(errorOf({ ...base, DEVSHARD_ESCROW_ID: '5' })).toContain('not both');
  });

  it('accepts single-escrow mode', () => {
    expect(
      loadConfig({ DEVSHARD_ADMIN_API_KEY: ADMIN, DEVSHARD_ESCROW_ID: '18446744073709551615' }).escrowMode,
    ).toEqual({ kind: 'single', escrowId: 18446744073709551615n });
  });

  it.each([
    ['-1', 'DEVSHARD_ESCROW_ID must be a decimal integer'],
    ['007', 'DEVSHARD_ESCROW_ID must be a decimal integer'],
    ['18446744073709551616', 'DEVSHARD_ESCROW_ID is larger than uint64'],
    ['abc', 'DEVSHARD_ESCROW_ID must be a decimal integer'],
  ])('rejects DEVSHARD_ESCROW_ID=%s', (value, message) => {
    expect(errorOf({ DEVSHARD_ADMIN_API_KEY: ADMIN, DEVSHARD_ESCROW_ID: value })).toContain(message);
  });

  it('parses DEVSHARDS_JSON entries', () => {
    const c = loadConfig({
      ...base,
      DEVSHARDS_JSON:
        '[{"escrow_id":7,"model_id":"m","active":false,"private_key_env":"KEY_B"},{"escrow_id":"8"}]',
    });
    expect(c.escrowMode).toEqual({
      kind: 'multi',
      preregistered: [
        { escrowId: 7n, modelId: 'm', active: false, privateKeyEnv: 'KEY_B' },
        { escrowId: 8n, active: true },
      ],
    });
  });

  it.each([
    ['{"escrow_id":1}', 'DEVSHARDS_JSON must be a JSON array of escrows'],
    ['[1', 'DEVSHARDS_JSON must be valid JSON'],
    ['[{}]', 'DEVSHARDS_JSON [0].escrow_id must be a non-negative integer'],
    ['[{"escrow_id":-3}]', 'DEVSHARDS_JSON [0].escrow_id must be a non-negative integer'],
    ['[{"escrow_id":1.5}]', 'DEVSHARDS_JSON [0].escrow_id must be a non-negative integer'],
    ['[{"escrow_id":1},{"escrow_id":"1"}]', 'DEVSHARDS_JSON [1].escrow_id 1 is listed twice'],
    ['[{"escrow_id":1,"modle_id":"x"}]', 'DEVSHARDS_JSON [0] has unknown field "modle_id"'],
    ['[{"escrow_id":1,"active":"yes"}]', 'DEVSHARDS_JSON [0].active must be true or false'],
    ['[{"escrow_id":1,"model_id":""}]', 'DEVSHARDS_JSON [0].model_id must be a non-empty string'],
    ['[{"escrow_id":1,"private_key_env":"lower"}]', 'DEVSHARDS_JSON [0].private_key_env must be'],
    ['["x"]', 'DEVSHARDS_JSON [0] must be an object'],
  ])('rejects DEVSHARDS_JSON=%s', (value, message) => {
    expect(errorOf({ ...base, DEVSHARDS_JSON: value })).toContain(message);
  });
});

describe('keys', () => {
  it('loads the private key as a redacting PrivateKey', () => {
    const c = loadConfig({ ...base, DEVSHARD_PRIVATE_KEY: PRIVATE_KEY });
    expect(c.creatorKey?.address).toBe('gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw');
    expect(inspect(c)).not.toContain(PRIVATE_KEY.slice(0, 16));
    expect(JSON.stringify(c, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))).not.toContain(
      PRIVATE_KEY.slice(0, 16),
    );
  });

  it.each([
    [`0x${PRIVATE_KEY}`, 'without a 0x prefix'],
    [PRIVATE_KEY.slice(1), 'must be 64 hex characters'],
    [`${PRIVATE_KEY.slice(0, 63)}g`, 'must be 64 hex characters'],
    ['00'.repeat(32), 'not a valid secp256k1 private key'],
  ])('rejects a bad DEVSHARD_PRIVATE_KEY without echoing it (%#)', (value, message) => {
    const error = errorOf({ ...base, DEVSHARD_PRIVATE_KEY: value });
    expect(error).toContain('DEVSHARD_PRIVATE_KEY');
    expect(error).toContain(message);
    expect(error).not.toContain(value.slice(2, 20));
  });

  it('hashes several comma-separated user keys and matches them in constant time', () => {
    const c = loadConfig({ ...base, DEVSHARD_API_KEYS: ` ${USER1} , ${USER2},` });
    expect(c.userKeyHashes).toHaveLength(2);
    expect(matchesKeyHash(USER1, c.userKeyHashes)).toBe(true);
    expect(matchesKeyHash(USER2, c.userKeyHashes)).toBe(true);
    expect(matchesKeyHash(`${USER1}x`, c.userKeyHashes)).toBe(false);
    expect(matchesKeyHash(ADMIN, c.userKeyHashes)).toBe(false);
    expect(inspect(c)).not.toContain(USER1);
  });

  it.each([
    ['pk-123456789012345678901234', 'DEVSHARD_API_KEYS entry 1 must be sk-'],
    [`${USER1},sk-short`, 'DEVSHARD_API_KEYS entry 2 must be sk-'],
    [`sk-admin-${'a'.repeat(48)}`, 'DEVSHARD_API_KEYS entry 1 is an admin key'],
  ])('rejects a bad DEVSHARD_API_KEYS (%#)', (value, message) => {
    const error = errorOf({ ...base, DEVSHARD_API_KEYS: value });
    expect(error).toContain(message);
    expect(error).not.toContain(value.slice(3, 20));
  });

  it('requires the admin key with its sk-admin- prefix', () => {
    expect(errorOf({ DEVSHARDS_JSON: '[]' })).toContain('DEVSHARD_ADMIN_API_KEY is required');
    const error = errorOf({ DEVSHARDS_JSON: '[]', DEVSHARD_ADMIN_API_KEY: USER1 });
    expect(error).toBe('DEVSHARD_ADMIN_API_KEY must start with sk-admin-');
    expect(errorOf({ DEVSHARDS_JSON: '[]', DEVSHARD_ADMIN_API_KEY: 'sk-admin-short' })).toContain(
      'DEVSHARD_ADMIN_API_KEY must be sk-admin- followed by',
    );
  });

  it('parses the encryption key', () => {
    expect(loadConfig({ ...base, GATEWAY_ENCRYPTION_KEY: 'aa'.repeat(32) }).encryptionKey).toHaveLength(32);
    expect(errorOf({ ...base, GATEWAY_ENCRYPTION_KEY: 'zz' })).toContain(
      'GATEWAY_ENCRYPTION_KEY must be 64 hex characters',
    );
  });

  it('lists secret values for log scrubbing, including URL passwords', () => {
    const secrets = secretValues({
      ...base,
      DEVSHARD_PRIVATE_KEY: PRIVATE_KEY,
      DEVSHARD_API_KEYS: `${USER1},${USER2}`,
      DATABASE_URL: 'postgres://gw:hunter2hunter2@db/gw',
    });
    expect(secrets).toEqual(expect.arrayContaining([PRIVATE_KEY, USER1, USER2, ADMIN, 'hunter2hunter2']));
  });
});

describe('numbers, switches and URLs', () => {
  it.each([
    ['GATEWAY_MAX_CONCURRENT_REQUESTS', '-1', 'must be a non-negative integer'],
    ['GATEWAY_MAX_CONCURRENT_REQUESTS', '1.5', 'must be a non-negative integer'],
    ['GATEWAY_MAX_CONCURRENT_REQUESTS', '99999999999999999999', 'is too large'],
    ['GATEWAY_MAX_INPUT_TOKENS_IN_FLIGHT', '-5', 'must be a non-negative integer'],
    ['GATEWAY_DEFAULT_MAX_TOKENS', '0', 'must be a positive integer'],
    ['GATEWAY_MAX_TOKENS_CAP', 'many', 'must be a non-negative integer'],
    ['DEVSHARD_TX_GAS_LIMIT', '-700000', 'must be a decimal integer'],
    ['DEVSHARD_PORT', '70000', 'must be a TCP port'],
    ['GATEWAY_CONTROLLER_PORT', 'x', 'must be a non-negative integer'],
    ['DEVSHARD_POC_REQUEST_MODE', 'strict', 'must be one of: off, relaxed'],
    ['DEVSHARD_CAPACITY_AWARE_LIMITS', 'maybe', 'must be on or off'],
    ['DEVSHARD_GATEWAY_DISABLED', 'perhaps', 'must be on or off'],
    ['DEVSHARD_CHAIN_REST', 'localhost:1317', 'must be an absolute http(s) URL'],
    ['DEVSHARD_TX_QUERY_REST', 'ftp://x', 'must be an absolute http(s) URL'],
    ['DEVSHARD_PUBLIC_API', 'node', 'must be an absolute http(s) URL'],
    ['GATEWAY_PROXY_INTERNAL_URL', 'proxy:8080', 'must be an absolute http(s) URL'],
    ['GATEWAY_CONTROLLER_URL', '//controller', 'must be an absolute http(s) URL'],
    ['DEVSHARD_GATEWAY_DISABLED_NEW_URL', 'elsewhere', 'must be an absolute http(s) URL'],
    ['DATABASE_URL', 'mysql://root@db/gw', 'must be a postgres or postgresql URL'],
    ['REDIS_URL', 'http://redis', 'must be a redis or rediss or unix URL'],
    ['LOG_LEVEL', 'loud', 'must be one of'],
    ['GATEWAY_LEASE_TTL_MS', '0', 'must be a positive integer'],
    ['GATEWAY_LEASE_TTL_MS', '10s', 'must be a non-negative integer'],
    ['GATEWAY_FLUSH_IDLE_MS', '-300', 'must be a non-negative integer'],
    ['GATEWAY_ADMISSION_TTL_MS', '2e3', 'must be a non-negative integer'],
    ['GATEWAY_MAX_ATTEMPTS', '0', 'must be a positive integer'],
    ['GATEWAY_RECEIPT_TIMEOUT_MS', '5s', 'must be a non-negative integer'],
    ['GATEWAY_ALLOW_PRIVATE_HOSTS', 'loopback', 'must be on or off'],
    ['GATEWAY_PASSTHROUGH_PARAMETERS', 'guided-json', 'must list parameter names'],
  ])('rejects %s=%s', (name, value, message) => {
    expect(errorOf({ ...base, [name]: value })).toContain(`${name} ${message}`);
  });

  it('accepts Unix sockets for Postgres (a host directory) and Redis (unix:)', () => {
    const c = loadConfig({
      ...base,
      DATABASE_URL: 'postgres://postgres@localhost/gw?host=/var/run/postgresql',
      REDIS_URL: 'unix:///run/redis/redis.sock?db=2',
    });
    expect(c.databaseUrl).toBe('postgres://postgres@localhost/gw?host=/var/run/postgresql');
    expect(c.redis.url).toBe('unix:///run/redis/redis.sock?db=2');
  });

  it('rejects a password-bearing DATABASE_URL without echoing the password', () => {
    const error = errorOf({ ...base, DATABASE_URL: 'mysql://gw:hunter2hunter2@db/gw' });
    expect(error).not.toContain('hunter2');
  });

  it('accepts good values', () => {
    const c = loadConfig({
      ...base,
      GATEWAY_MAX_CONCURRENT_REQUESTS: '0',
      GATEWAY_MAX_INPUT_TOKENS_IN_FLIGHT: '200000',
      GATEWAY_DEFAULT_MAX_TOKENS: '100',
      GATEWAY_MAX_TOKENS_CAP: '200',
      DEVSHARD_TX_GAS_LIMIT: '500000',
      DEVSHARD_PORT: '18080',
      DEVSHARD_POC_REQUEST_MODE: 'OFF',
      DEVSHARD_CAPACITY_AWARE_LIMITS: 'false',
      DEVSHARD_CHAIN_REST: 'https://node2.gonka.ai:8000/chain-api/',
      DEVSHARD_TX_QUERY_REST: 'http://tx:1317',
      DEVSHARD_PUBLIC_API: 'http://node:9000',
      DEVSHARD_GATEWAY_DISABLED: 'on',
      DEVSHARD_GATEWAY_DISABLED_MESSAGE: 'moved',
      DEVSHARD_GATEWAY_DISABLED_NEW_URL: 'https://new.example',
      GATEWAY_REPLICA_ID: 'r1',
      LOG_LEVEL: 'debug',
      DEVSHARD_MODEL: 'MiniMaxAI/MiniMax-M2.7',
      REDIS_KEY_PREFIX: 'gw-test:',
      GATEWAY_LEASE_TTL_MS: '1500',
      GATEWAY_FLUSH_IDLE_MS: '300',
      GATEWAY_ADMISSION_TTL_MS: '2000',
      GATEWAY_ALLOW_PRIVATE_HOSTS: 'on',
      GATEWAY_PASSTHROUGH_PARAMETERS: 'guided_json, min_tokens,guided_json',
      GATEWAY_MAX_ATTEMPTS: '2',
      GATEWAY_RECEIPT_TIMEOUT_MS: '1000',
      GATEWAY_FIRST_TOKEN_TIMEOUT_MS: '1500',
      GATEWAY_STREAM_STALL_TIMEOUT_MS: '2000',
      GATEWAY_HEDGE_BUDGET_PERCENT: '0',
      GATEWAY_HEDGE_MIN_PER_MINUTE: '5',
      GATEWAY_HOST_QUARANTINE_AFTER: '3',
      GATEWAY_HOST_QUARANTINE_MS: '1000',
      GATEWAY_HOST_QUARANTINE_MAX_MS: '8000',
      GATEWAY_HOST_MAX_QUARANTINED_PERCENT: '50',
    });
    expect(c.limits).toEqual({ maxConcurrentRequests: 0, maxInputTokensInFlight: 200_000 });
    expect(c.chain).toEqual({
      restUrl: 'https://node2.gonka.ai:8000/chain-api',
      txQueryRestUrl: 'http://tx:1317',
      publicApiUrl: 'http://node:9000',
      gasLimit: 500_000n,
    });
    expect(c.pocRequestMode).toBe('off');
    expect(c.capacityAwareLimits).toBe(false);
    expect(c.proxy).toEqual({
      port: 18080,
      internalUrl: 'http://127.0.0.1:18080',
      replicaId: 'r1',
      leaseTtlMs: 1_500,
      flushIdleMs: 300,
      admissionTtlMs: 2_000,
      allowPrivateHosts: true,
      passthroughParameters: ['guided_json', 'min_tokens'],
      serving: {
        maxAttempts: 2,
        receiptTimeoutMs: 1_000,
        firstTokenTimeoutMs: 1_500,
        streamStallTimeoutMs: 2_000,
        hedgeBudgetPercent: 0,
        hedgeMinPerMinute: 5,
        quarantineAfter: 3,
        quarantineMs: 1_000,
        quarantineMaxMs: 8_000,
        maxQuarantinedPercent: 50,
      },
    });
    expect(c.bootstrapSettings).toEqual({
      defaultRequestMaxTokens: 100,
      requestMaxTokensCap: 200,
      disabled: { enabled: true, message: 'moved', newUrl: 'https://new.example' },
    });
    expect(c.defaultModel).toBe('MiniMaxAI/MiniMax-M2.7');
    expect(c.redis.keyPrefix).toBe('gw-test:');
    expect(c.logLevel).toBe('debug');
  });

  it('checks cross-variable rules', () => {
    expect(errorOf({ ...base, GATEWAY_DEFAULT_MAX_TOKENS: '5000' })).toBe(
      'GATEWAY_DEFAULT_MAX_TOKENS (5000) must not exceed GATEWAY_MAX_TOKENS_CAP (4096)',
    );
    expect(errorOf({ ...base, DEVSHARD_GATEWAY_DISABLED: 'on' })).toContain(
      'DEVSHARD_GATEWAY_DISABLED_NEW_URL is required',
    );
  });
});
