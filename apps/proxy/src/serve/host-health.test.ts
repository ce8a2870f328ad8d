import {
  closeRedis,
  type HostHealthRecord,
  type HostHealthState,
  liftQuarantine,
  openRedis,
  type RedisKeys,
  readHostHealth,
  redisKeys,
} from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HostHealth, type HostHealthOptions, PROBE_EVERY_MS } from './host-health.js';

const MODEL = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';
const OTHER_MODEL = 'Qwen/Qwen3-32B';
const P1 = 'gonka1host0000000000000000000000000000aaaa';
const P2 = 'gonka1host0000000000000000000000000000bbbb';
const P3 = 'gonka1host0000000000000000000000000000cccc';
const P4 = 'gonka1host0000000000000000000000000000dddd';
const P5 = 'gonka1host0000000000000000000000000000eeee';
const P6 = 'gonka1host0000000000000000000000000000ffff';

const CONFIG = { quarantineAfter: 3, quarantineMs: 1_000, quarantineMaxMs: 8_000, maxQuarantinedPercent: 34 };
const NONE: ReadonlySet<string> = new Set();

let t: TestRedis;
/** The connection of a second replica. */
let replica: Redis;
let keys: RedisKeys;
let keyspace = 0;
/** Wall clock of the replicas; behind the real one, so an operator's lift (stamped by Redis' caller) comes after. */
const clock = { ms: 0 };
const transitions: {
  participant: string;
  from: HostHealthState;
  to: HostHealthState;
  reason: string;
  untilMs: number;
}[] = [];
const started: HostHealth[] = [];

beforeAll(async () => {
  t = await createTestRedis();
  replica = openRedis(t.url, { name: 'host-health-test-replica' });
});
afterAll(async () => {
  await closeRedis(replica);
  await t.cleanup();
});
beforeEach(() => {
  keys = redisKeys(`${t.prefix}${keyspace++}:`);
  clock.ms = Date.now() - 3_600_000;
  transitions.length = 0;
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((h) => h.stop()));
});

function health(options: Partial<HostHealthOptions> = {}): HostHealth {
  return new HostHealth({
    redis: t.redis,
    keys,
    config: CONFIG,
    now: () => clock.ms,
    onTransition: ({ participant, from, to, reason, untilMs }) =>
      transitions.push({ participant, from, to, reason, untilMs }),
    ...options,
  });
}

function fail(h: HostHealth, participant: string, times = CONFIG.quarantineAfter, model = MODEL): void {
  for (let i = 0; i < times; i++) h.failed(model, participant, 'stall');
}

async function recordOf(participant: string, model = MODEL): Promise<HostHealthRecord | undefined> {
  return (await readHostHealth(t.redis, keys)).find(
    (r) => r.participant === participant && r.model === model,
  );
}

function slots(...entries: [string, number][]): ReadonlyMap<string, number> {
  return new Map(entries);
}

describe('HostHealth state machine', () => {
  it('quarantines a participant after quarantineAfter consecutive failures', () => {
    const h = health();
    fail(h, P1, CONFIG.quarantineAfter - 1);
    expect(h.stateOf(MODEL, P1)).toBe('healthy');
    h.failed(MODEL, P1, 'receipt_timeout');
    expect(h.stateOf(MODEL, P1)).toBe('quarantined');
    expect(h.stateOf(OTHER_MODEL, P1)).toBe('healthy');
    expect(transitions).toEqual([
      {
        participant: P1,
        from: 'healthy',
        to: 'quarantined',
        reason: 'receipt_timeout',
        untilMs: clock.ms + 1_000,
      },
    ]);
  });

  it('starts counting again after a success', () => {
    const h = health();
    fail(h, P1, 2);
    h.succeeded(MODEL, P1, {});
    fail(h, P1, 2);
    expect(h.stateOf(MODEL, P1)).toBe('healthy');
    expect(h.snapshot()).toMatchObject([{ participant: P1, consecutiveFailures: 2 }]);
    fail(h, P1, 1);
    expect(h.stateOf(MODEL, P1)).toBe('quarantined');
  });

  it('does not lengthen a quarantine for failures that arrive during it', () => {
    const h = health();
    fail(h, P1);
    const until = clock.ms + 1_000;
    clock.ms += 500;
    fail(h, P1, 5);
    clock.ms = until - 1;
    expect(h.stateOf(MODEL, P1)).toBe('quarantined');
    clock.ms = until;
    expect(h.stateOf(MODEL, P1)).toBe('probation');
  });

  it('moves an expired quarantine to probation, and a successful probe to healthy', () => {
    const h = health();
    const start = clock.ms;
    fail(h, P1);
    clock.ms = start + 999;
    expect(h.stateOf(MODEL, P1)).toBe('quarantined');
    clock.ms = start + 1_000;
    expect(h.stateOf(MODEL, P1)).toBe('probation');
    expect(h.attemptSent(MODEL, P1)).toBe(true);
    h.succeeded(MODEL, P1, { receiptMs: 80 });
    expect(h.stateOf(MODEL, P1)).toBe('healthy');
    expect(h.attemptSent(MODEL, P1)).toBe(false);
    expect(transitions.map((x) => [x.from, x.to, x.reason])).toEqual([
      ['healthy', 'quarantined', 'stall'],
      ['quarantined', 'probation', 'expired'],
      ['probation', 'healthy', 'success'],
    ]);
  });

  it('quarantines for base × 2^(n−1), doubling after each failed probe, capped at the max', () => {
    const h = health();
    fail(h, P1);
    const lengths: number[] = [];
    let from = clock.ms;
    for (let i = 0; i < 5; i++) {
      const until = transitions.at(-1)!.untilMs;
      lengths.push(until - from);
      clock.ms = until;
      expect(h.stateOf(MODEL, P1)).toBe('probation');
      expect(h.attemptSent(MODEL, P1)).toBe(true);
      from = clock.ms;
      h.failed(MODEL, P1, 'first_token_timeout');
      expect(h.stateOf(MODEL, P1)).toBe('quarantined');
    }
    lengths.push(transitions.at(-1)!.untilMs - from);
    expect(lengths).toEqual([1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
  });

  it('starts the backoff again at the base after a healthy stretch as long as the max quarantine', () => {
    const h = health();
    fail(h, P1);
    clock.ms += 1_000;
    h.attemptSent(MODEL, P1);
    h.succeeded(MODEL, P1, {});
    // A short healthy stretch: the next quarantine is the second one (2 s).
    fail(h, P1);
    expect(transitions.at(-1)!.untilMs - clock.ms).toBe(2_000);
    const lastError = clock.ms;
    clock.ms += 2_000;
    h.attemptSent(MODEL, P1);
    h.succeeded(MODEL, P1, {});
    // A success more than quarantineMaxMs after the last error forgets the earlier quarantines.
    clock.ms = lastError + CONFIG.quarantineMaxMs + 1;
    h.succeeded(MODEL, P1, {});
    fail(h, P1);
    expect(transitions.at(-1)).toMatchObject({ to: 'quarantined', untilMs: clock.ms + 1_000 });
  });

  it('records peak-EWMA latencies: a slower sample at once, a faster one at a weight of 0.2', () => {
    const h = health();
    h.succeeded(MODEL, P1, { receiptMs: 100, firstTokenMs: 1_000 });
    expect(h.snapshot()).toMatchObject([{ receiptMs: 100, firstTokenMs: 1_000 }]);
    h.succeeded(MODEL, P1, { receiptMs: 300, firstTokenMs: 500 });
    expect(h.snapshot()).toMatchObject([{ receiptMs: 300, firstTokenMs: 900 }]);
    h.succeeded(MODEL, P1, { receiptMs: 100 });
    const [entry] = h.snapshot();
    expect(entry?.receiptMs).toBeCloseTo(260, 9);
    expect(entry?.firstTokenMs).toBe(900);
  });
});

describe('HostHealth.avoidFor', () => {
  const three = slots([P1, 1], [P2, 1], [P3, 1]);

  it('returns undefined when nothing is troubled and nothing was tried, else what was tried', () => {
    const h = health();
    h.succeeded(MODEL, P1, {});
    expect(h.avoidFor(MODEL, three, NONE, false)).toBeUndefined();
    expect(h.avoidFor(MODEL, three, NONE, true)).toBeUndefined();
    expect(h.avoidFor(MODEL, undefined, NONE, false)).toBeUndefined();
    expect([...(h.avoidFor(MODEL, three, new Set([P2]), false) ?? [])]).toEqual([P2]);
    // A troubled participant of another model changes nothing here.
    fail(h, P1, 3, OTHER_MODEL);
    expect(h.avoidFor(MODEL, three, NONE, false)).toBeUndefined();
  });

  it('avoids a quarantined participant, together with those tried', () => {
    const h = health();
    fail(h, P1);
    expect([...(h.avoidFor(MODEL, three, NONE, false) ?? [])]).toEqual([P1]);
    expect([...(h.avoidFor(MODEL, three, new Set([P2]), false) ?? [])].sort()).toEqual([P1, P2]);
  });

  it('lets one first attempt probe a participant in probation, never a hedge', () => {
    const h = health();
    fail(h, P1);
    clock.ms += 1_000;
    expect(h.avoidFor(MODEL, three, NONE, false)).toBeUndefined();
    expect([...(h.avoidFor(MODEL, three, NONE, true) ?? [])]).toEqual([P1]);
    expect(h.attemptSent(MODEL, P1)).toBe(true);
    // The probe is in flight: no second one, from a first attempt or a hedge.
    expect([...(h.avoidFor(MODEL, three, NONE, false) ?? [])]).toEqual([P1]);
    expect([...(h.avoidFor(MODEL, three, NONE, true) ?? [])]).toEqual([P1]);
    expect(h.attemptSent(MODEL, P2)).toBe(false);
  });

  it('probes a participant at most every 5 s', () => {
    const h = health();
    fail(h, P1);
    clock.ms += 1_000;
    const probeAt = clock.ms;
    h.attemptSent(MODEL, P1);
    // The failed probe quarantines for 2 s; probation then comes before the next probe is due.
    h.failed(MODEL, P1, 'stall');
    clock.ms = probeAt + 2_000;
    expect(h.stateOf(MODEL, P1)).toBe('probation');
    expect([...(h.avoidFor(MODEL, three, NONE, false) ?? [])]).toEqual([P1]);
    clock.ms = probeAt + PROBE_EVERY_MS - 1;
    expect([...(h.avoidFor(MODEL, three, NONE, false) ?? [])]).toEqual([P1]);
    clock.ms = probeAt + PROBE_EVERY_MS;
    expect(h.avoidFor(MODEL, three, NONE, false)).toBeUndefined();
    expect(h.attemptSent(MODEL, P1)).toBe(true);
  });

  it('skips at most maxQuarantinedPercent of the slots; the least-failing quarantined ones stay', () => {
    const h = health();
    fail(h, P1, 5);
    fail(h, P2, 4);
    fail(h, P3, 3);
    // 34 % of 6 slots: at most 2 skipped, the two failing most.
    const six = slots([P1, 1], [P2, 1], [P3, 1], [P4, 1], [P5, 1], [P6, 1]);
    expect([...(h.avoidFor(MODEL, six, NONE, false) ?? [])].sort()).toEqual([P1, P2]);
    // What the request tried is avoided besides, whatever the share.
    expect([...(h.avoidFor(MODEL, six, new Set([P4, P5]), false) ?? [])].sort()).toEqual([P1, P2, P4, P5]);
    // Weighted by slots: 34 % of 10 slots is 3; P1 (2 slots) and P2 (1) fill it.
    const ten = slots([P1, 2], [P2, 1], [P3, 1], [P4, 6]);
    expect([...(h.avoidFor(MODEL, ten, NONE, false) ?? [])].sort()).toEqual([P1, P2]);
    // 34 % of 2 slots is 0: nothing is skipped.
    expect([...(h.avoidFor(MODEL, slots([P1, 1], [P4, 1]), NONE, false) ?? [])]).toEqual([]);
  });

  it('never skips more slots than the share, even when the most-failing participant alone exceeds it', () => {
    const h = health();
    fail(h, P1, 6);
    fail(h, P2, 3);
    const ten = slots([P1, 4], [P2, 1], [P3, 5]);
    const avoid = [...(h.avoidFor(MODEL, ten, NONE, false) ?? [])];
    const skipped = avoid.reduce((n, p) => n + (ten.get(p) ?? 0), 0);
    expect(skipped).toBeLessThanOrEqual(3);
    expect(avoid).toEqual([P2]);
  });
});

describe('HostHealth fleet sync (Redis)', () => {
  it('writes counters and state once a sync, and never counts them twice', async () => {
    const h = health();
    h.attemptSent(MODEL, P1);
    h.succeeded(MODEL, P1, { receiptMs: 120, firstTokenMs: 900, tokensPerSecond: 50 });
    h.succeeded(MODEL, P1, { tokensPerSecond: 100 });
    for (const why of ['stall', 'receipt_timeout', 'error_event'] as const) {
      h.attemptSent(MODEL, P1);
      h.failed(MODEL, P1, why, why === 'error_event' ? 'http_503' : undefined);
    }
    h.burned(MODEL, P2, 3);
    await h.sync();

    const p1 = await recordOf(P1);
    expect(p1).toMatchObject({
      state: 'quarantined',
      quarantinedUntilMs: clock.ms + 1_000,
      timesQuarantined: 1,
      consecutiveFailures: 3,
      lastError: 'error_event: http_503',
      lastErrorAtMs: clock.ms,
      receiptMs: 120,
      firstTokenMs: 900,
      tokensPerSecond: 60,
    });
    expect(p1?.counters).toMatchObject({
      attempts: 4,
      successes: 2,
      stalls: 1,
      receipt_timeouts: 1,
      error_events: 1,
      probes: 0,
    });
    expect((await recordOf(P2))?.counters.burned_nonces).toBe(3);

    await h.sync();
    expect((await recordOf(P1))?.counters).toMatchObject({ attempts: 4, successes: 2, stalls: 1 });
    h.attemptSent(MODEL, P2);
    await h.sync();
    await h.sync();
    expect((await recordOf(P1))?.counters.attempts).toBe(4);
    expect((await recordOf(P2))?.counters).toMatchObject({ attempts: 1, burned_nonces: 3 });
  });

  it('writes a probe and the state it leads to', async () => {
    const h = health();
    fail(h, P1);
    clock.ms += 1_000;
    h.attemptSent(MODEL, P1);
    await h.sync();
    expect(await recordOf(P1)).toMatchObject({ state: 'probation' });
    expect((await recordOf(P1))?.counters.probes).toBe(1);
    h.succeeded(MODEL, P1, {});
    await h.sync();
    expect(await recordOf(P1)).toMatchObject({
      state: 'healthy',
      quarantinedUntilMs: 0,
      consecutiveFailures: 0,
    });
  });

  it('another replica adopts a quarantine and the latencies from Redis', async () => {
    const a = health();
    a.succeeded(MODEL, P1, { receiptMs: 250, firstTokenMs: 1_200 });
    fail(a, P1);
    const until = clock.ms + 1_000;
    await a.sync();

    const b = health({ redis: replica });
    expect(b.stateOf(MODEL, P1)).toBe('healthy');
    await b.sync();
    expect(b.stateOf(MODEL, P1)).toBe('quarantined');
    expect(b.snapshot()).toMatchObject([
      { participant: P1, model: MODEL, state: 'quarantined', receiptMs: 250, firstTokenMs: 1_200 },
    ]);
    expect([...(b.avoidFor(MODEL, slots([P1, 1], [P2, 1], [P3, 1]), NONE, false) ?? [])]).toEqual([P1]);
    expect(transitions.at(-1)).toMatchObject({ participant: P1, to: 'quarantined', reason: 'fleet' });
    clock.ms = until;
    expect(b.stateOf(MODEL, P1)).toBe('probation');
  });

  it('does not adopt a quarantine that has already run out', async () => {
    const a = health();
    fail(a, P1);
    await a.sync();
    clock.ms += 1_000;
    const b = health({ redis: replica });
    await b.sync();
    expect(b.stateOf(MODEL, P1)).toBe('healthy');
  });

  it("adopts an operator's lift, on the replica that quarantined and on the others", async () => {
    const a = health();
    fail(a, P1);
    await a.sync();
    const b = health({ redis: replica });
    await b.sync();
    expect(b.stateOf(MODEL, P1)).toBe('quarantined');

    expect(await liftQuarantine(t.redis, keys, P1)).toBe(1);
    await a.sync();
    await b.sync();
    expect(a.stateOf(MODEL, P1)).toBe('healthy');
    expect(b.stateOf(MODEL, P1)).toBe('healthy');
    expect(a.avoidFor(MODEL, slots([P1, 1], [P2, 1], [P3, 1]), NONE, false)).toBeUndefined();
    expect(a.snapshot()).toMatchObject([{ participant: P1, consecutiveFailures: 0 }]);
    expect(transitions.filter((x) => x.reason === 'lifted').map((x) => x.from)).toEqual([
      'quarantined',
      'quarantined',
    ]);
    // The lift stays: the replicas' next syncs do not quarantine again.
    await a.sync();
    await b.sync();
    expect(await recordOf(P1)).toMatchObject({ state: 'healthy', quarantinedUntilMs: 0 });
    expect(a.stateOf(MODEL, P1)).toBe('healthy');
  });

  it('adopts an operator lift that comes after the failures but before this replica synced them', async () => {
    const a = health();
    a.attemptSent(MODEL, P1);
    await a.sync();
    // The quarantine is decided here and not yet written when the operator lifts.
    fail(a, P1);
    expect(await liftQuarantine(t.redis, keys, P1)).toBe(1);
    await a.sync();
    expect(a.stateOf(MODEL, P1)).toBe('healthy');
    await a.sync();
    const b = health({ redis: replica });
    await b.sync();
    expect(b.stateOf(MODEL, P1)).toBe('healthy');
  });

  it('ignores a lift older than the last failure', async () => {
    const a = health({ config: { ...CONFIG, quarantineMs: 7_200_000, quarantineMaxMs: 7_200_000 } });
    fail(a, P1);
    await a.sync();
    await liftQuarantine(t.redis, keys, P1);
    // The replica's clock passes the lift, then the host fails again before the next sync.
    clock.ms = Date.now() + 1_000;
    fail(a, P1, 1);
    await a.sync();
    expect(a.stateOf(MODEL, P1)).toBe('quarantined');
  });

  it('writes what is left on stop(), and a restarted replica keeps the latencies', async () => {
    const a = health({ syncEveryMs: 60_000 });
    await a.start();
    a.attemptSent(MODEL, P1);
    a.succeeded(MODEL, P1, { receiptMs: 90, firstTokenMs: 700 });
    await a.stop();
    expect((await recordOf(P1))?.counters).toMatchObject({ attempts: 1, successes: 1 });

    const restarted = health({ syncEveryMs: 60_000 });
    started.push(restarted);
    await restarted.start();
    expect(restarted.snapshot()).toMatchObject([{ participant: P1, receiptMs: 90, firstTokenMs: 700 }]);
  });

  it('syncs on its own every syncEveryMs once started', async () => {
    const a = health({ syncEveryMs: 20 });
    started.push(a);
    await a.start();
    a.attemptSent(MODEL, P1);
    const deadline = Date.now() + 2_000;
    while ((await recordOf(P1))?.counters.attempts !== 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await recordOf(P1))?.counters.attempts).toBe(1);
  });
});
