// Fleet-wide serving health of one host (participant) for one model, shared by every proxy replica
// and read by the controller (GET /v1/admin/hosts, POST /v1/admin/hosts/{participant}/lift).
//
// Redis layout (keys.ts, all under the configured prefix):
//   host:<model>:<participant>  hash, one per (model, participant):
//     state                 'healthy' | 'probation' | 'quarantined'
//     quarantined_until     epoch ms, 0 = not quarantined
//     times_quarantined     integer
//     consecutive_failures  integer
//     last_error            short code ('receipt_timeout', 'http_503', …), '' = none
//     last_error_at         epoch ms, 0 = never
//     receipt_ms            EWMA ms, '' = no sample
//     first_token_ms        EWMA ms, '' = no sample
//     tokens_per_s          EWMA, '' = no sample
//     updated_at            epoch ms of the last write
//     lifted_at             epoch ms of the last operator lift, 0 = never
//     <counter>             one integer field per HOST_COUNTERS name, moved by HINCRBY only
//   hosts                   set of `${model}|${participant}` (models never contain '|')
//   hosts:changes           pub/sub channel; an operator lift publishes `${model}|${participant}`
// Numbers are decimal strings. Readers are tolerant: a missing or malformed field reads as its
// default, so writers of different versions can share one record.
import type { Redis } from 'ioredis';
import type { RedisKeys } from './keys.js';

export const HOST_HEALTH_STATES = ['healthy', 'probation', 'quarantined'] as const;
export type HostHealthState = (typeof HOST_HEALTH_STATES)[number];

export const HOST_COUNTERS = [
  'attempts',
  'successes',
  'empty_answers',
  'error_events',
  'cut_streams',
  'throttled',
  'failures',
  'receipt_timeouts',
  'first_token_timeouts',
  'stalls',
  'burned_nonces',
  'probes',
] as const;
export type HostCounter = (typeof HOST_COUNTERS)[number];

export interface HostHealthRecord {
  readonly participant: string;
  readonly model: string;
  readonly state: HostHealthState;
  /** Epoch ms, 0 = not quarantined. */
  readonly quarantinedUntilMs: number;
  readonly timesQuarantined: number;
  readonly consecutiveFailures: number;
  /** Short code, e.g. 'receipt_timeout', 'http_503'. */
  readonly lastError: string | undefined;
  readonly lastErrorAtMs: number;
  /** EWMA. */
  readonly receiptMs: number | undefined;
  /** EWMA. */
  readonly firstTokenMs: number | undefined;
  /** EWMA. */
  readonly tokensPerSecond: number | undefined;
  readonly counters: Readonly<Record<HostCounter, number>>;
  readonly updatedAtMs: number;
  /** Last operator lift (epoch ms), 0 = never. */
  readonly liftedAtMs: number;
}

export type HostHealthSettable = Pick<
  HostHealthRecord,
  | 'state'
  | 'quarantinedUntilMs'
  | 'timesQuarantined'
  | 'consecutiveFailures'
  | 'lastError'
  | 'lastErrorAtMs'
  | 'receiptMs'
  | 'firstTokenMs'
  | 'tokensPerSecond'
>;

export interface HostHealthUpdate {
  readonly participant: string;
  readonly model: string;
  /** HINCRBY per counter (integers; 0 is skipped). */
  readonly add?: Partial<Record<HostCounter, number>>;
  /** HSET; an optional field given as undefined is cleared (stored as ''). */
  readonly set?: Partial<HostHealthSettable>;
}

const FIELD_OF: Readonly<Record<keyof HostHealthSettable, string>> = {
  state: 'state',
  quarantinedUntilMs: 'quarantined_until',
  timesQuarantined: 'times_quarantined',
  consecutiveFailures: 'consecutive_failures',
  lastError: 'last_error',
  lastErrorAtMs: 'last_error_at',
  receiptMs: 'receipt_ms',
  firstTokenMs: 'first_token_ms',
  tokensPerSecond: 'tokens_per_s',
};

/** The index member of one record; models never contain '|', so the first '|' splits it. */
export function hostHealthMember(model: string, participant: string): string {
  return `${model}|${participant}`;
}

function splitMember(member: string): { model: string; participant: string } | undefined {
  const bar = member.indexOf('|');
  if (bar <= 0 || bar === member.length - 1) return undefined;
  return { model: member.slice(0, bar), participant: member.slice(bar + 1) };
}

function encodeValue(value: string | number | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  return value;
}

/** One pipeline (one socket write): every update, SADD to the index, updated_at. */
export async function writeHostHealth(
  redis: Redis,
  keys: RedisKeys,
  updates: readonly HostHealthUpdate[],
): Promise<void> {
  if (updates.length === 0) return;
  const now = String(Date.now());
  const pipeline = redis.pipeline();
  for (const u of updates) {
    const key = keys.hostHealth(u.model, u.participant);
    for (const [counter, delta] of Object.entries(u.add ?? {})) {
      if (!(HOST_COUNTERS as readonly string[]).includes(counter)) continue;
      const n = Math.trunc(delta ?? 0);
      if (Number.isFinite(n) && n !== 0) pipeline.hincrby(key, counter, n);
    }
    const fields: Record<string, string> = { updated_at: now };
    for (const [name, value] of Object.entries(u.set ?? {})) {
      const field = FIELD_OF[name as keyof HostHealthSettable];
      if (field !== undefined) fields[field] = encodeValue(value as string | number | undefined);
    }
    pipeline.hset(key, fields);
    pipeline.sadd(keys.hostHealthIndex, hostHealthMember(u.model, u.participant));
  }
  const results = await pipeline.exec();
  const failed = results?.find(([err]) => err !== null)?.[0];
  if (failed) throw failed;
}

function int(value: string | undefined): number {
  const n = Number(value);
  return value === undefined || value === '' || !Number.isFinite(n) ? 0 : Math.trunc(n);
}

function optionalNumber(value: string | undefined): number | undefined {
  const n = Number(value);
  return value === undefined || value === '' || !Number.isFinite(n) ? undefined : n;
}

/** Parses one HGETALL result; missing or malformed fields read as their defaults. */
export function decodeHostHealth(
  model: string,
  participant: string,
  hash: Readonly<Record<string, string>>,
): HostHealthRecord {
  const state = (HOST_HEALTH_STATES as readonly string[]).includes(hash.state ?? '')
    ? (hash.state as HostHealthState)
    : 'healthy';
  const counters = Object.fromEntries(HOST_COUNTERS.map((c) => [c, int(hash[c])])) as Record<
    HostCounter,
    number
  >;
  return {
    participant,
    model,
    state,
    quarantinedUntilMs: int(hash.quarantined_until),
    timesQuarantined: int(hash.times_quarantined),
    consecutiveFailures: int(hash.consecutive_failures),
    lastError: hash.last_error ? hash.last_error : undefined,
    lastErrorAtMs: int(hash.last_error_at),
    receiptMs: optionalNumber(hash.receipt_ms),
    firstTokenMs: optionalNumber(hash.first_token_ms),
    tokensPerSecond: optionalNumber(hash.tokens_per_s),
    counters,
    updatedAtMs: int(hash.updated_at),
    liftedAtMs: int(hash.lifted_at),
  };
}

/**
 * Every record of the index (one pipeline of HGETALL after SMEMBERS), parsed tolerantly. A member
 * whose hash no longer exists is left out.
 */
export async function readHostHealth(redis: Redis, keys: RedisKeys): Promise<HostHealthRecord[]> {
  const members = (await redis.smembers(keys.hostHealthIndex))
    .map(splitMember)
    .filter((m) => m !== undefined);
  if (members.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const m of members) pipeline.hgetall(keys.hostHealth(m.model, m.participant));
  const results = (await pipeline.exec()) ?? [];
  const records: HostHealthRecord[] = [];
  members.forEach((m, i) => {
    const [err, hash] = results[i] ?? [null, {}];
    if (err) throw err;
    const fields = (hash ?? {}) as Record<string, string>;
    if (Object.keys(fields).length > 0) records.push(decodeHostHealth(m.model, m.participant, fields));
  });
  return records;
}

// KEYS: the record hashes to lift. ARGV: 1 now (epoch ms), 2 change channel, 3.. the index member
// of each key. Only an existing record is touched (a lift never creates one); returns the count.
const LIFT = `
local lifted = 0
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'state', 'healthy', 'quarantined_until', '0', 'consecutive_failures', '0',
      'lifted_at', ARGV[1], 'updated_at', ARGV[1])
    redis.call('PUBLISH', ARGV[2], ARGV[i + 2])
    lifted = lifted + 1
  end
end
return lifted
`;

/**
 * Operator lift: state healthy, quarantined_until 0, consecutive_failures 0, lifted_at = now, for one
 * model or every model of the participant; publishes `${model}|${participant}` on hostHealthChanges
 * for each; returns how many records were lifted (0 = no such record).
 */
export async function liftQuarantine(
  redis: Redis,
  keys: RedisKeys,
  participant: string,
  model?: string,
): Promise<number> {
  const targets = (await redis.smembers(keys.hostHealthIndex))
    .map(splitMember)
    .filter((m) => m !== undefined)
    .filter((m) => m.participant === participant && (model === undefined || m.model === model));
  if (targets.length === 0) return 0;
  const lifted = await redis.eval(
    LIFT,
    targets.length,
    ...targets.map((m) => keys.hostHealth(m.model, m.participant)),
    String(Date.now()),
    keys.hostHealthChanges,
    ...targets.map((m) => hostHealthMember(m.model, m.participant)),
  );
  return Number(lifted);
}
