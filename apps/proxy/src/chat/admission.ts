// Fleet-wide admission (spec §8): GATEWAY_MAX_CONCURRENT_REQUESTS and
// GATEWAY_MAX_INPUT_TOKENS_IN_FLIGHT hold for all replicas together, decided by ONE Lua script per
// request. Each admitted request is a member of a sorted set scored by its expiry, with its input
// tokens in a hash; the replica that admitted it pushes the expiry forward while the request runs, so
// the entries of a replica that dies expire on their own (0 = no limit).
//
// A stored API key's own limits (rpm, tpm, max_concurrent, budget; docs/keys-and-usage.md) are
// decided in the same script, so a request costs one round trip whatever the key: requests and
// tokens of the last 60 s as sliding windows, requests in flight like the global set, and the
// budget as the period's spend counter plus the reservations in flight. The serving replica settles
// the budget when the request ends (`settle`: the reservation becomes the served cost); a
// reservation nobody settles (its replica died) expires like any entry.
import { adjustSpendCounter, holdForTurn, type RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

// KEYS: 1 requests zset, 2 tokens hash, 3 key rpm zset, 4 key tpm zset, 5 key tpm tokens hash,
// 6 key in-flight zset, 7 key reservations zset, 8 key reservation ngonka hash, 9 key spend counter.
// ARGV: 1 now ms, 2 expiry ms, 3 ticket, 4 input tokens, 5 max concurrent, 6 max tokens in flight,
// 7 key limits apply (1|0), 8 rpm, 9 tpm, 10 tpm charge, 11 key max concurrent, 12 budget ('' none),
// 13 reservation ngonka, 14 spend seed ngonka, 15 spend counter ttl s (0 none).
// Returns {admitted (1|0), reason, a, b, c, d}: reason 0 ok, 1 concurrency, 2 input tokens, 3 rpm,
// 4 tpm, 5 key concurrency, 6 budget. Admitted: a = requests left, b = ms until a request frees,
// c = tokens left, d = ms until tokens free (-1 = the key has no such limit). rpm/tpm refused: b / d
// = ms until the request would fit (-1 never). Budget refused: a = spent, b = reserved in flight.
// Budgets are at most 2^53 ngonka (admin schema), so Lua's doubles count them exactly.
const ADMIT = `
local now = tonumber(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  redis.call('HDEL', KEYS[2], unpack(expired))
end
local keyed = ARGV[7] == '1'
local rpm = tonumber(ARGV[8])
local tpm = tonumber(ARGV[9])
local charge = tonumber(ARGV[10])
local used_r, used_t, tpm_entries = 0, 0, {}
if keyed then
  local since = now - 60000
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', since)
    used_r = redis.call('ZCARD', KEYS[3])
    if used_r >= rpm then
      local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
      return {0, 3, 0, math.max(1, tonumber(oldest[2]) + 60000 - now), 0, 0}
    end
  end
  if tpm > 0 then
    -- The window's total is kept in field '#sum', so an admission costs O(entries that left it).
    local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', since)
    if #old > 0 then
      local gone = 0
      for _, t in ipairs(old) do gone = gone + tonumber(redis.call('HGET', KEYS[5], t) or '0') end
      redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', since)
      redis.call('HDEL', KEYS[5], unpack(old))
      redis.call('HINCRBY', KEYS[5], '#sum', -gone)
    end
    used_t = tonumber(redis.call('HGET', KEYS[5], '#sum') or '0')
    if used_t + charge > tpm then
      if charge > tpm then return {0, 4, 0, 0, 0, -1} end
      tpm_entries = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
      local freed = 0
      for i = 1, #tpm_entries, 2 do
        freed = freed + tonumber(redis.call('HGET', KEYS[5], tpm_entries[i]) or '0')
        if used_t - freed + charge <= tpm then
          return {0, 4, 0, 0, 0, math.max(1, tonumber(tpm_entries[i + 1]) + 60000 - now)}
        end
      end
      return {0, 4, 0, 0, 0, 60000}
    end
  end
  local kmax = tonumber(ARGV[11])
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  if kmax > 0 and redis.call('ZCARD', KEYS[6]) >= kmax then return {0, 5, 0, 0, 0, 0} end
  if ARGV[12] ~= '' then
    local lapsed = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now)
    if #lapsed > 0 then
      redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now)
      redis.call('HDEL', KEYS[8], unpack(lapsed))
    end
    if redis.call('EXISTS', KEYS[9]) == 0 then
      redis.call('SET', KEYS[9], ARGV[14])
      if tonumber(ARGV[15]) > 0 then redis.call('EXPIRE', KEYS[9], ARGV[15]) end
    end
    local spent = tonumber(redis.call('GET', KEYS[9]))
    local reserved = 0
    for _, v in ipairs(redis.call('HVALS', KEYS[8])) do reserved = reserved + tonumber(v) end
    if spent + reserved + tonumber(ARGV[13]) > tonumber(ARGV[12]) then return {0, 6, spent, reserved, 0, 0} end
  end
end
local count = redis.call('ZCARD', KEYS[1])
local maxc = tonumber(ARGV[5])
if maxc > 0 and count >= maxc then return {0, 1, count, 0, 0, 0} end
local maxt = tonumber(ARGV[6])
local tokens = tonumber(ARGV[4])
if maxt > 0 and count > 0 then
  local sum = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[2])) do sum = sum + tonumber(v) end
  if sum + tokens > maxt then return {0, 2, count, 0, 0, 0} end
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], tokens)
if not keyed then return {1, 0, -1, -1, -1, -1} end
local r_left, r_reset, t_left, t_reset = -1, -1, -1, -1
if rpm > 0 then
  redis.call('ZADD', KEYS[3], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[3], 61000)
  r_left = rpm - used_r - 1
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  r_reset = math.max(0, tonumber(oldest[2]) + 60000 - now)
end
if tpm > 0 then
  redis.call('ZADD', KEYS[4], now, ARGV[3])
  redis.call('HSET', KEYS[5], ARGV[3], charge)
  redis.call('HINCRBY', KEYS[5], '#sum', charge)
  redis.call('PEXPIRE', KEYS[4], 61000)
  redis.call('PEXPIRE', KEYS[5], 61000)
  t_left = tpm - used_t - charge
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  t_reset = math.max(0, tonumber(oldest[2]) + 60000 - now)
end
redis.call('ZADD', KEYS[6], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[6], 3600000)
if ARGV[12] ~= '' then
  redis.call('ZADD', KEYS[7], ARGV[2], ARGV[3])
  redis.call('HSET', KEYS[8], ARGV[3], ARGV[13])
  redis.call('PEXPIRE', KEYS[7], 3600000)
  redis.call('PEXPIRE', KEYS[8], 3600000)
end
return {1, 0, r_left, r_reset, t_left, t_reset}
`;

// KEYS: 1 requests zset, 2 tokens hash, 3 key in-flight zset. ARGV: ticket.
const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
`;

// KEYS: 1 key reservations zset, 2 key reservation ngonka hash, 3 key spend counter, 4 key tpm tokens
// hash. ARGV: 1 ticket, 2 served cost ngonka, 3 tokens actually used ('' unknown).
// The reservation becomes the served cost. Only the replica that served settles a ticket, once (the
// admitting replica never settles a request it forwarded), so the charge does not depend on the
// reservation still being there: one that lapsed while the owner was slow is still charged. A missing
// counter is left missing: the next admission seeds it from the ledger, which has the row.
const SETTLE = `
local had = redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('INCRBY', KEYS[3], ARGV[2])
end
local charged = redis.call('HGET', KEYS[4], ARGV[1])
if ARGV[3] ~= '' and charged then
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[3])
  redis.call('HINCRBY', KEYS[4], '#sum', tonumber(ARGV[3]) - tonumber(charged))
end
return had
`;

/** A stored key's limits for one request (the key's row as KeyDirectory holds it, resolved to numbers). */
export interface KeyAdmission {
  readonly keyId: string;
  /** 0 = no limit. */
  readonly rpm: number;
  readonly tpm: number;
  /** What this request counts against tpm: its input estimate plus max_tokens (as OpenAI counts). */
  readonly tpmCharge: number;
  readonly maxConcurrent: number;
  readonly budget?: {
    readonly limit: bigint;
    /** The most this request can cost: (input + max_tokens) × the model's token price. */
    readonly reservation: bigint;
    /** Redis tag of the current period, and the ledger's spend in it (seeds a missing counter). */
    readonly periodTag: string;
    readonly seed: bigint;
    /** Seconds the counter lives (past the period's end); 0 for `total`. */
    readonly ttlSeconds: number;
  };
}

export type KeyRejection = 'rpm' | 'tpm' | 'key_concurrency' | 'budget';

export interface RateLimitState {
  /** -1 where the key has no such limit. */
  readonly requestsLeft: number;
  readonly requestsResetMs: number;
  readonly tokensLeft: number;
  readonly tokensResetMs: number;
}

export type AdmissionOutcome =
  | { readonly admitted: true; readonly ticket: string; readonly rate?: RateLimitState }
  | { readonly admitted: false; readonly reason: 'concurrency' | 'input_tokens' }
  | {
      readonly admitted: false;
      readonly reason: KeyRejection;
      /** ms until the request could fit (rpm, tpm); -1 = never (larger than the tpm limit). */
      readonly retryAfterMs: number;
      /** Budget refusals: the period's spend and the reservations in flight. */
      readonly spent?: bigint;
      readonly reserved?: bigint;
    };

export interface AdmissionOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly maxConcurrent: number;
  readonly maxInputTokens: number;
  /** How long an entry lives without a refresh (default 15 s). */
  readonly entryTtlMs?: number;
}

/** ⌈body bytes / 4⌉, OpenAI's input estimate (docs/keys-and-usage.md, "Keys"). */
export function estimateInputTokens(bodyBytes: number): number {
  return Math.ceil(bodyBytes / 4);
}

const KEY_REJECTIONS: Record<number, KeyRejection> = {
  3: 'rpm',
  4: 'tpm',
  5: 'key_concurrency',
  6: 'budget',
};
/** Key slots of the script for a caller without stored-key limits (never written). */
const NO_KEY = 'none';

export class Admission {
  readonly #o: AdmissionOptions;
  readonly #ttl: number;
  /** Tickets this replica holds (→ the stored key they count against): refreshed until released. */
  readonly #held = new Map<string, string | undefined>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: AdmissionOptions) {
    this.#o = options;
    this.#ttl = options.entryTtlMs ?? 15_000;
    options.redis.defineCommand('gwAdmit', { numberOfKeys: 9, lua: ADMIT });
    options.redis.defineCommand('gwRelease', { numberOfKeys: 3, lua: RELEASE });
    options.redis.defineCommand('gwSettle', { numberOfKeys: 4, lua: SETTLE });
    this.#timer = setInterval(() => void this.#refresh(), Math.max(50, Math.floor(this.#ttl / 3)));
    this.#timer.unref();
  }

  get held(): number {
    return this.#held.size;
  }

  async admit(ticket: string, inputTokens: number, key?: KeyAdmission): Promise<AdmissionOutcome> {
    const { redis, keys } = this.#o;
    const now = Date.now();
    const id = key?.keyId ?? NO_KEY;
    const budget = key?.budget;
    // Concurrent requests' admissions leave in one write at the end of this turn
    // (packages/shared redis/one-write.ts).
    holdForTurn(redis);
    const [ok, reason, a, b, c, d] = (await (redis as unknown as Commands).gwAdmit(
      keys.admissionRequests,
      keys.admissionTokens,
      keys.keyRpm(id),
      keys.keyTpm(id),
      keys.keyTpmTokens(id),
      keys.keyInFlight(id),
      keys.keyReservations(id),
      keys.keyReservationAmounts(id),
      keys.keySpend(id, budget?.periodTag ?? NO_KEY),
      now,
      now + this.#ttl,
      ticket,
      inputTokens,
      this.#o.maxConcurrent,
      this.#o.maxInputTokens,
      key ? 1 : 0,
      key?.rpm ?? 0,
      key?.tpm ?? 0,
      key?.tpmCharge ?? 0,
      key?.maxConcurrent ?? 0,
      budget ? budget.limit.toString() : '',
      budget ? budget.reservation.toString() : '0',
      budget ? budget.seed.toString() : '0',
      budget?.ttlSeconds ?? 0,
    )) as [number, number, number, number, number, number];
    if (ok !== 1) {
      const keyReason = KEY_REJECTIONS[reason];
      if (keyReason === 'budget') {
        return {
          admitted: false,
          reason: keyReason,
          retryAfterMs: -1,
          spent: BigInt(a),
          reserved: BigInt(b),
        };
      }
      if (keyReason) return { admitted: false, reason: keyReason, retryAfterMs: keyReason === 'tpm' ? d : b };
      return { admitted: false, reason: reason === 1 ? 'concurrency' : 'input_tokens' };
    }
    this.#held.set(ticket, key?.keyId);
    if (!key) return { admitted: true, ticket };
    return {
      admitted: true,
      ticket,
      rate: { requestsLeft: a, requestsResetMs: b, tokensLeft: c, tokensResetMs: d },
    };
  }

  async release(ticket: string): Promise<void> {
    if (!this.#held.has(ticket)) return;
    const keyId = this.#held.get(ticket) ?? NO_KEY;
    this.#held.delete(ticket);
    const { redis, keys } = this.#o;
    await (redis as unknown as Commands).gwRelease(
      keys.admissionRequests,
      keys.admissionTokens,
      keys.keyInFlight(keyId),
      ticket,
    );
  }

  /**
   * The request's end on the replica that served it (possibly not the one that admitted it): its
   * budget reservation becomes `cost` in the period's counter, and its tpm entry the tokens it used.
   */
  async settle(
    ticket: string,
    key: Pick<KeyAdmission, 'keyId' | 'budget'>,
    cost: bigint,
    usedTokens: number | undefined,
  ): Promise<void> {
    const { redis, keys } = this.#o;
    await (redis as unknown as Commands).gwSettle(
      keys.keyReservations(key.keyId),
      keys.keyReservationAmounts(key.keyId),
      keys.keySpend(key.keyId, key.budget?.periodTag ?? NO_KEY),
      keys.keyTpmTokens(key.keyId),
      ticket,
      cost.toString(),
      usedTokens === undefined ? '' : String(usedTokens),
    );
  }

  /** Adds `delta` (negative: a refund) to a key's spend counter of one period, if it exists. */
  async adjustSpend(keyId: string, periodTag: string, delta: bigint): Promise<void> {
    await adjustSpendCounter(this.#o.redis, this.#o.keys.keySpend(keyId, periodTag), delta);
  }

  /** Fleet-wide requests admitted right now. */
  async inFlight(): Promise<number> {
    return this.#o.redis.zcount(this.#o.keys.admissionRequests, Date.now(), '+inf');
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async #refresh(): Promise<void> {
    if (this.#held.size === 0) return;
    const { redis, keys } = this.#o;
    const expiry = Date.now() + this.#ttl;
    const all: (string | number)[] = [];
    const byKey = new Map<string, (string | number)[]>();
    for (const [t, keyId] of this.#held) {
      all.push(expiry, t);
      if (keyId === undefined) continue;
      const list = byKey.get(keyId) ?? [];
      list.push(expiry, t);
      byKey.set(keyId, list);
    }
    const pipeline = redis.pipeline().zadd(keys.admissionRequests, 'XX', ...all);
    for (const [keyId, args] of byKey) {
      pipeline.zadd(keys.keyInFlight(keyId), 'XX', ...args);
      // A reservation lives while its request does; the serving replica's settle removes it.
      pipeline.zadd(keys.keyReservations(keyId), 'XX', ...args);
    }
    await pipeline.exec().catch(() => undefined);
  }
}

interface Commands {
  gwAdmit(...args: (string | number)[]): Promise<unknown>;
  gwRelease(...args: (string | number)[]): Promise<unknown>;
  gwSettle(...args: (string | number)[]): Promise<unknown>;
}
