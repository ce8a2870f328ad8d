// Host health, fleet-wide (apps/proxy README "Deadlines, hedged attempts and host health"): per
// (participant, model), the outcomes of this replica's attempts, a state, and rolling latencies.
//
//   healthy ──(GATEWAY_HOST_QUARANTINE_AFTER consecutive failures)──▶ quarantined
//   quarantined ──(its time runs out: base × 2^(n−1), capped)──▶ probation
//   probation ──(one real request, the probe: success)──▶ healthy
//   probation ──(the probe fails)──▶ quarantined again, for twice as long
//
// A quarantined participant's nonces carry no request: the session spends them fee-only (devshard
// dominant-hosts.ts burnBlockedNonces), as for a blocked dominant host. At most one probe is in flight
// per participant and model, and none more often than PROBE_EVERY_MS; a hedged attempt never probes.
// Never more than GATEWAY_HOST_MAX_QUARANTINED_PERCENT of an escrow's slots are skipped for it (as
// Envoy's max ejection percent): past that the least-failing quarantined hosts still get requests.
//
// Everything here is in memory on the hot path; once a second (SYNC_EVERY_MS) the counters this
// replica added and the state it changed are written to Redis in one pipeline
// (@gonka-gateway/shared host-health.ts), and every record is read back: a quarantine another
// replica decided, an operator's lift (`lifted_at`), and the latencies of a record this replica has
// not measured yet (a restart keeps them) are adopted.
import {
  type HostCounter,
  type HostHealthRecord,
  type HostHealthState,
  type HostHealthUpdate,
  hostHealthMember,
  type RedisKeys,
  readHostHealth,
  type ServingConfig,
  writeHostHealth,
} from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

/** Why an attempt failed, as counted against its host. */
export type AttemptFailure =
  | 'receipt_timeout'
  | 'first_token_timeout'
  | 'stall'
  | 'empty_answer'
  | 'error_event'
  | 'cut_stream'
  | 'throttled'
  | 'failure';

const COUNTER_OF: Record<AttemptFailure, HostCounter> = {
  receipt_timeout: 'receipt_timeouts',
  first_token_timeout: 'first_token_timeouts',
  stall: 'stalls',
  empty_answer: 'empty_answers',
  error_event: 'error_events',
  cut_stream: 'cut_streams',
  throttled: 'throttled',
  failure: 'failures',
};

export const SYNC_EVERY_MS = 1_000;
/** At most one probe of a participant per model this often. */
export const PROBE_EVERY_MS = 5_000;
/** EWMA weight of a sample at or below the estimate (peak EWMA: a slower sample replaces it at once). */
const DECAY = 0.2;

export interface HostSample {
  readonly receiptMs?: number | undefined;
  readonly firstTokenMs?: number | undefined;
  readonly tokensPerSecond?: number | undefined;
}

interface Entry {
  readonly participant: string;
  readonly model: string;
  state: HostHealthState;
  quarantinedUntilMs: number;
  timesQuarantined: number;
  consecutiveFailures: number;
  lastError: string | undefined;
  lastErrorAtMs: number;
  receiptMs: number | undefined;
  firstTokenMs: number | undefined;
  tokensPerSecond: number | undefined;
  liftedAtMs: number;
  probeInFlight: boolean;
  lastProbeAtMs: number;
  /** Counters added since the last sync, and whether the state fields changed. */
  add: Partial<Record<HostCounter, number>>;
  dirty: boolean;
  dirtyLatency: boolean;
}

export interface HostHealthOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly config: Pick<
    ServingConfig,
    'quarantineAfter' | 'quarantineMs' | 'quarantineMaxMs' | 'maxQuarantinedPercent'
  >;
  /** Wall clock in ms (quarantine deadlines are shared across replicas). */
  readonly now?: () => number;
  readonly syncEveryMs?: number;
  readonly onError?: (error: Error) => void;
  /** A participant's state changed (logs, metrics). */
  readonly onTransition?: (change: {
    participant: string;
    model: string;
    from: HostHealthState;
    to: HostHealthState;
    reason: string;
    untilMs: number;
  }) => void;
}

function peakEwma(estimate: number | undefined, sample: number | undefined): number | undefined {
  if (sample === undefined || !Number.isFinite(sample)) return estimate;
  if (estimate === undefined || sample > estimate) return sample;
  return estimate * (1 - DECAY) + sample * DECAY;
}

function ewma(estimate: number | undefined, sample: number | undefined): number | undefined {
  if (sample === undefined || !Number.isFinite(sample)) return estimate;
  return estimate === undefined ? sample : estimate * (1 - DECAY) + sample * DECAY;
}

export class HostHealth {
  readonly #o: HostHealthOptions;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  /** Models with any participant not healthy: the hot path skips the rest without allocating. */
  readonly #troubled = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #syncing: Promise<void> | undefined;
  #stopped = false;

  constructor(options: HostHealthOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.sync().catch((error: Error) => this.#o.onError?.(error));
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#syncing;
    await this.sync().catch(() => undefined);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.sync()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => this.#schedule());
    }, this.#o.syncEveryMs ?? SYNC_EVERY_MS);
    this.#timer.unref();
  }

  #entry(model: string, participant: string): Entry {
    const key = hostHealthMember(model, participant);
    let e = this.#entries.get(key);
    if (!e) {
      e = {
        participant,
        model,
        state: 'healthy',
        quarantinedUntilMs: 0,
        timesQuarantined: 0,
        consecutiveFailures: 0,
        lastError: undefined,
        lastErrorAtMs: 0,
        receiptMs: undefined,
        firstTokenMs: undefined,
        tokensPerSecond: undefined,
        liftedAtMs: 0,
        probeInFlight: false,
        lastProbeAtMs: Number.NEGATIVE_INFINITY,
        add: {},
        dirty: false,
        dirtyLatency: false,
      };
      this.#entries.set(key, e);
    }
    return e;
  }

  #count(e: Entry, counter: HostCounter, n = 1): void {
    e.add[counter] = (e.add[counter] ?? 0) + n;
  }

  #setState(e: Entry, to: HostHealthState, reason: string): void {
    const from = e.state;
    if (from === to) return;
    e.state = to;
    e.dirty = true;
    const troubled =
      (this.#troubled.get(e.model) ?? 0) + (from === 'healthy' ? 1 : to === 'healthy' ? -1 : 0);
    if (troubled > 0) this.#troubled.set(e.model, troubled);
    else this.#troubled.delete(e.model);
    this.#o.onTransition?.({
      participant: e.participant,
      model: e.model,
      from,
      to,
      reason,
      untilMs: e.quarantinedUntilMs,
    });
  }

  /** The state now: a quarantine whose time ran out is probation. */
  stateOf(model: string, participant: string): HostHealthState {
    const e = this.#entries.get(hostHealthMember(model, participant));
    if (!e) return 'healthy';
    if (e.state === 'quarantined' && e.quarantinedUntilMs <= this.#now())
      this.#setState(e, 'probation', 'expired');
    return e.state;
  }

  /**
   * The participants an attempt on an escrow must avoid: those `tried` by the same request, the
   * quarantined ones, and those in probation that may not be probed now (a probe in flight or too
   * recent, or a hedged attempt) — within the max quarantined share of the escrow's slots. Undefined
   * when there is nothing to avoid (the common case: no allocation).
   */
  avoidFor(
    model: string,
    slotCount: ReadonlyMap<string, number> | undefined,
    tried: ReadonlySet<string>,
    hedge: boolean,
  ): ReadonlySet<string> | undefined {
    if (!this.#troubled.has(model) || !slotCount) return tried.size > 0 ? tried : undefined;
    const now = this.#now();
    const unwanted: Entry[] = [];
    let slots = 0;
    for (const [participant, count] of slotCount) {
      slots += count;
      if (tried.has(participant)) continue;
      const e = this.#entries.get(hostHealthMember(model, participant));
      if (!e || this.stateOf(model, participant) === 'healthy') continue;
      const probeable = !e.probeInFlight && !hedge && now - e.lastProbeAtMs >= PROBE_EVERY_MS;
      if (e.state === 'quarantined' || !probeable) unwanted.push(e);
    }
    if (unwanted.length === 0) return tried.size > 0 ? tried : undefined;
    unwanted.sort(
      (a, b) => b.consecutiveFailures - a.consecutiveFailures || b.quarantinedUntilMs - a.quarantinedUntilMs,
    );
    const avoid = new Set(tried);
    const budget = Math.floor((slots * this.#o.config.maxQuarantinedPercent) / 100);
    let used = 0;
    for (const e of unwanted) {
      const count = slotCount.get(e.participant) ?? 0;
      if (used + count > budget) continue;
      used += count;
      avoid.add(e.participant);
    }
    return avoid;
  }

  /** An attempt was sent to `participant`; returns whether it is the probe of a host in probation. */
  attemptSent(model: string, participant: string): boolean {
    const e = this.#entry(model, participant);
    this.#count(e, 'attempts');
    if (this.stateOf(model, participant) !== 'probation') return false;
    e.probeInFlight = true;
    e.lastProbeAtMs = this.#now();
    this.#count(e, 'probes');
    return true;
  }

  succeeded(model: string, participant: string, sample: HostSample): void {
    const e = this.#entry(model, participant);
    this.#count(e, 'successes');
    e.consecutiveFailures = 0;
    e.probeInFlight = false;
    e.receiptMs = peakEwma(e.receiptMs, sample.receiptMs);
    e.firstTokenMs = peakEwma(e.firstTokenMs, sample.firstTokenMs);
    e.tokensPerSecond = ewma(e.tokensPerSecond, sample.tokensPerSecond);
    e.dirtyLatency = true;
    // A long healthy stretch forgets earlier quarantines (the backoff starts again at the base).
    if (e.timesQuarantined > 0 && this.#now() - e.lastErrorAtMs > this.#o.config.quarantineMaxMs) {
      e.timesQuarantined = 0;
      e.dirty = true;
    }
    if (e.state !== 'healthy') {
      e.quarantinedUntilMs = 0;
      this.#setState(e, 'healthy', 'success');
    }
  }

  failed(model: string, participant: string, why: AttemptFailure, detail?: string): void {
    const e = this.#entry(model, participant);
    this.#count(e, COUNTER_OF[why]);
    e.consecutiveFailures++;
    e.lastError = detail ? `${why}: ${detail}`.slice(0, 200) : why;
    e.lastErrorAtMs = this.#now();
    e.dirty = true;
    const wasProbe = e.probeInFlight;
    e.probeInFlight = false;
    const state = this.stateOf(model, participant);
    if (state === 'quarantined') return;
    if (wasProbe || state === 'probation' || e.consecutiveFailures >= this.#o.config.quarantineAfter) {
      e.timesQuarantined++;
      const ms = Math.min(
        this.#o.config.quarantineMaxMs,
        this.#o.config.quarantineMs * 2 ** Math.min(30, e.timesQuarantined - 1),
      );
      e.quarantinedUntilMs = this.#now() + ms;
      this.#setState(e, 'quarantined', why);
    }
  }

  /** A probe ended without a verdict (the client left, another attempt won): another may go. */
  probeAbandoned(model: string, participant: string): void {
    const e = this.#entries.get(hostHealthMember(model, participant));
    if (e) e.probeInFlight = false;
  }

  /** Nonces of `participant` spent fee-only because it was avoided. */
  burned(model: string, participant: string, count: number): void {
    this.#count(this.#entry(model, participant), 'burned_nonces', count);
  }

  /** This replica's view (metrics, status). */
  snapshot(): readonly {
    participant: string;
    model: string;
    state: HostHealthState;
    consecutiveFailures: number;
    receiptMs: number | undefined;
    firstTokenMs: number | undefined;
  }[] {
    return [...this.#entries.values()].map((e) => ({
      participant: e.participant,
      model: e.model,
      state: this.stateOf(e.model, e.participant),
      consecutiveFailures: e.consecutiveFailures,
      receiptMs: e.receiptMs,
      firstTokenMs: e.firstTokenMs,
    }));
  }

  /** Writes what changed here, then adopts what other replicas and operators decided. */
  sync(): Promise<void> {
    this.#syncing ??= this.#sync().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  async #sync(): Promise<void> {
    const updates: HostHealthUpdate[] = [];
    for (const e of this.#entries.values()) {
      const hasCounts = Object.keys(e.add).length > 0;
      if (!hasCounts && !e.dirty && !e.dirtyLatency) continue;
      const add = e.add;
      e.add = {};
      updates.push({
        participant: e.participant,
        model: e.model,
        ...(hasCounts ? { add } : {}),
        set: {
          ...(e.dirty
            ? {
                state: e.state,
                quarantinedUntilMs: e.quarantinedUntilMs,
                timesQuarantined: e.timesQuarantined,
                consecutiveFailures: e.consecutiveFailures,
                lastError: e.lastError,
                lastErrorAtMs: e.lastErrorAtMs,
              }
            : {}),
          ...(e.dirtyLatency
            ? { receiptMs: e.receiptMs, firstTokenMs: e.firstTokenMs, tokensPerSecond: e.tokensPerSecond }
            : {}),
        },
      });
      e.dirty = false;
      e.dirtyLatency = false;
    }
    if (updates.length > 0) {
      try {
        await writeHostHealth(this.#o.redis, this.#o.keys, updates);
      } catch (error) {
        // Not lost: added back, written with the next sync.
        for (const u of updates) {
          const e = this.#entry(u.model, u.participant);
          for (const [k, v] of Object.entries(u.add ?? {})) this.#count(e, k as HostCounter, v);
          e.dirty = true;
        }
        throw error;
      }
    }
    this.#adopt(await readHostHealth(this.#o.redis, this.#o.keys));
  }

  #adopt(records: readonly HostHealthRecord[]): void {
    for (const r of records) {
      const e = this.#entry(r.model, r.participant);
      // An operator's lift wins over every failure before it, ours included (even one this sync
      // just wrote back over the lifted state): the entry is healthy, and written so next time.
      if (r.liftedAtMs > e.liftedAtMs) {
        e.liftedAtMs = r.liftedAtMs;
        if (r.liftedAtMs >= e.lastErrorAtMs) {
          // Written back only when this replica had the host in another state (its own sync may
          // have put that state over the lift); a replica that had it healthy changes nothing.
          if (e.state !== 'healthy') e.dirty = true;
          e.consecutiveFailures = 0;
          e.quarantinedUntilMs = 0;
          e.probeInFlight = false;
          this.#setState(e, 'healthy', 'lifted');
          continue;
        }
      }
      // Another replica's quarantine, decided after the last lift.
      if (
        r.state === 'quarantined' &&
        r.lastErrorAtMs > r.liftedAtMs &&
        r.quarantinedUntilMs > e.quarantinedUntilMs &&
        r.quarantinedUntilMs > this.#now()
      ) {
        e.quarantinedUntilMs = r.quarantinedUntilMs;
        e.timesQuarantined = Math.max(e.timesQuarantined, r.timesQuarantined);
        e.consecutiveFailures = Math.max(e.consecutiveFailures, r.consecutiveFailures);
        e.lastError = r.lastError;
        e.lastErrorAtMs = Math.max(e.lastErrorAtMs, r.lastErrorAtMs);
        this.#setState(e, 'quarantined', 'fleet');
        e.dirty = false;
      }
      e.receiptMs ??= r.receiptMs;
      e.firstTokenMs ??= r.firstTokenMs;
      e.tokensPerSecond ??= r.tokensPerSecond;
    }
  }
}
