// Fleet-wide admission (issue 11 §4, spec §8): GATEWAY_MAX_CONCURRENT_REQUESTS and
// GATEWAY_MAX_INPUT_TOKENS_IN_FLIGHT hold for all replicas together, decided by ONE Lua script per
// request. Each admitted request is a member of a sorted set scored by its expiry, with its input
// tokens in a hash; the replica that admitted it pushes the expiry forward while the request runs, so
// the entries of a replica that dies expire on their own (0 = no limit).
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

// KEYS: requests zset, tokens hash. ARGV: now ms, expiry ms, id, tokens, max concurrent, max tokens.
// Returns {admitted (1|0), reason (0 ok, 1 concurrency, 2 tokens), in flight}.
const ADMIT = `
local now = tonumber(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  redis.call('HDEL', KEYS[2], unpack(expired))
end
local count = redis.call('ZCARD', KEYS[1])
local maxc = tonumber(ARGV[5])
if maxc > 0 and count >= maxc then return {0, 1, count} end
local maxt = tonumber(ARGV[6])
local tokens = tonumber(ARGV[4])
if maxt > 0 and count > 0 then
  local sum = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[2])) do sum = sum + tonumber(v) end
  if sum + tokens > maxt then return {0, 2, count} end
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], tokens)
return {1, 0, count + 1}
`;

const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`;

export type AdmissionOutcome =
  | { readonly admitted: true; readonly ticket: string }
  | { readonly admitted: false; readonly reason: 'concurrency' | 'input_tokens' };

export interface AdmissionOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly maxConcurrent: number;
  readonly maxInputTokens: number;
  /** How long an entry lives without a refresh (default 15 s). */
  readonly entryTtlMs?: number;
}

/** ⌈body bytes / 4⌉ (issue 11 §4). */
export function estimateInputTokens(bodyBytes: number): number {
  return Math.ceil(bodyBytes / 4);
}

export class Admission {
  readonly #o: AdmissionOptions;
  readonly #ttl: number;
  /** Tickets this replica holds: their expiry is refreshed until released. */
  readonly #held = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: AdmissionOptions) {
    this.#o = options;
    this.#ttl = options.entryTtlMs ?? 15_000;
    options.redis.defineCommand('gwAdmit', { numberOfKeys: 2, lua: ADMIT });
    options.redis.defineCommand('gwRelease', { numberOfKeys: 2, lua: RELEASE });
    this.#timer = setInterval(() => void this.#refresh(), Math.max(50, Math.floor(this.#ttl / 3)));
    this.#timer.unref();
  }

  get held(): number {
    return this.#held.size;
  }

  async admit(ticket: string, inputTokens: number): Promise<AdmissionOutcome> {
    const { redis, keys } = this.#o;
    const now = Date.now();
    const [ok, reason] = (await (redis as unknown as Commands).gwAdmit(
      keys.admissionRequests,
      keys.admissionTokens,
      now,
      now + this.#ttl,
      ticket,
      inputTokens,
      this.#o.maxConcurrent,
      this.#o.maxInputTokens,
    )) as [number, number, number];
    if (ok !== 1) return { admitted: false, reason: reason === 1 ? 'concurrency' : 'input_tokens' };
    this.#held.add(ticket);
    return { admitted: true, ticket };
  }

  async release(ticket: string): Promise<void> {
    if (!this.#held.delete(ticket)) return;
    const { redis, keys } = this.#o;
    await (redis as unknown as Commands).gwRelease(keys.admissionRequests, keys.admissionTokens, ticket);
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
    const expiry = Date.now() + this.#ttl;
    const args: (string | number)[] = [];
    for (const t of this.#held) args.push(expiry, t);
    await this.#o.redis.zadd(this.#o.keys.admissionRequests, 'XX', ...args).catch(() => 0);
  }
}

interface Commands {
  gwAdmit(...args: (string | number)[]): Promise<unknown>;
  gwRelease(...args: (string | number)[]): Promise<unknown>;
}
