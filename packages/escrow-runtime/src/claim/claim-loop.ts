// The claim pass a replica runs every few hundred milliseconds (architecture §2.2): read the active
// escrows from Postgres, count live replicas, see which escrows are leased or faulted in Redis, then
// claim unowned ones up to this replica's fair share and hand back those it should not keep. After
// a replica dies (or Redis loses everything) its escrows are unleased within one TTL and claimed by
// the next passes of the survivors.
//
// A new escrow does not wait for the next pass. The controller announces every pool change on
// `pool:changes` after its Postgres commit, a registration or an activation included (architecture
// §1: "It publishes every pool change to Redis"), so an announced escrow id this loop does not know
// as active starts a pass at once. In that pass a replica below its share claims it at once; after a
// short grace (announcedGraceMs) any replica claims it beyond the share, the way an overdue escrow
// is claimed, so a miscounted directory cannot keep it waiting for overdueAfterMs. The first lease
// taken wins (SET NX); the fair share rebalances later, one escrow per pass.
//
// Escrows are spread so each fresh live replica owns one of every model it serves when there are
// enough (fair-share.ts): a replica that owns more of a model than a fresh peer leaves an unowned
// escrow of it to that peer for spreadDeferMs (default one pass period, so the peer's own next pass
// finds it), then claims it anyway. When that happens the model is held for spreadHoldMs: claimed
// without deferral and never handed back to a peer, so a peer that cannot serve the model costs one
// wait, not a drain every few passes. A takeover after a replica died is not slowed: a dead replica
// stops refreshing its directory entry and is no peer (ReplicaDirectory.entries).
import { performance } from 'node:perf_hooks';
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import { parseLeaseValue } from '../lease/escrow-lease.js';
import { type ActiveEscrow, readActiveEscrows } from './active-escrows.js';
import { planClaims } from './fair-share.js';
import type { ReplicaDirectory } from './replica-directory.js';

/** What the claim loop drives: the replica's registry of owned sessions. */
export interface ClaimTarget {
  /** Escrows this replica owns or is opening. */
  owned(): ReadonlySet<bigint>;
  /** Takes the lease and opens the session; false when someone else holds the lease or opening failed. */
  claim(escrow: ActiveEscrow): Promise<boolean>;
  /** Drains the session and releases the lease (architecture §2.6 hand-off). */
  drain(escrowId: bigint): Promise<void>;
}

export interface ClaimLoopOptions {
  readonly sql: Sql;
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly directory: ReplicaDirectory;
  readonly target: ClaimTarget;
  /** Pass period (default 500 ms). */
  readonly everyMs?: number;
  /** An escrow unowned this long is claimed even beyond the fair share (default 2 s). */
  readonly overdueAfterMs?: number;
  /**
   * A connection in subscriber mode for `keys.poolChanges` (shared with other followers of the
   * channel; never closed here). Without one, a new escrow waits for the next periodic pass.
   */
  readonly subscriber?: Redis;
  /**
   * How long an announced new escrow waits for a replica below its share before any replica claims
   * it beyond the share (default 250 ms).
   */
  readonly announcedGraceMs?: number;
  /**
   * How long an unowned escrow is left to a fresh peer owning fewer of its model before this replica
   * claims it anyway (default everyMs: every peer running the same period has had a pass).
   */
  readonly spreadDeferMs?: number;
  /** After a peer did not take a deferred escrow, how long its model is claimed without deferral (default 5 min). */
  readonly spreadHoldMs?: number;
  readonly onError?: (error: Error) => void;
}

export interface ClaimPassResult {
  readonly claimed: bigint[];
  readonly released: bigint[];
}

export const ANNOUNCED_GRACE_MS = 250;
export const SPREAD_HOLD_MS = 300_000;

export class ClaimLoop {
  readonly #o: ClaimLoopOptions;
  readonly #unownedSince = new Map<bigint, number>();
  readonly #releasing = new Set<bigint>();
  /** Models whose deferred escrow no peer took, until when (performance.now()): no spreading. */
  readonly #held = new Map<string, number>();
  /** The active escrows of the last pass: an announcement of one of these starts nothing. */
  #known: ReadonlySet<bigint> = new Set();
  /** Escrows announced while not known as active, and when (performance.now()). */
  readonly #announced = new Map<bigint, number>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  /** An announcement arrived during a pass: the next one starts as soon as it ends. */
  #again = false;
  /**
   * When the next pass is due for an announced escrow whose grace runs out, or a deferred escrow
   * whose spread deferral does (performance.now()).
   */
  #graceEndsAt = Number.POSITIVE_INFINITY;
  #stopped = false;
  readonly #onMessage = (channel: string, message: string): void => {
    if (channel !== this.#o.keys.poolChanges || this.#stopped) return;
    let id: bigint;
    try {
      id = BigInt(message);
    } catch {
      return; // not an escrow id: nothing to claim
    }
    if (this.#known.has(id)) return;
    if (!this.#announced.has(id)) this.#announced.set(id, performance.now());
    this.#passSoon();
  };
  /** Back after a disconnect: what was announced meanwhile never arrived. */
  readonly #onReconnect = (): void => this.#passSoon();

  constructor(options: ClaimLoopOptions) {
    this.#o = options;
  }

  /** Subscribes (when given a subscriber), then runs the first pass at once. */
  async start(): Promise<void> {
    this.#stopped = false;
    const sub = this.#o.subscriber;
    if (sub) {
      sub.on('message', this.#onMessage);
      sub.on('ready', this.#onReconnect);
      // Subscribed before the first pass reads Postgres, so no registration falls between the two.
      await sub.subscribe(this.#o.keys.poolChanges).catch((error: Error) => this.#o.onError?.(error));
    }
    if (!this.#stopped) this.#schedule(0);
  }

  /** Stops scheduling passes and waits for the one running. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#o.subscriber?.off('message', this.#onMessage);
    this.#o.subscriber?.off('ready', this.#onReconnect);
    await this.#running;
  }

  /** One pass (also callable directly, e.g. by tests or right after start-up). */
  async pass(): Promise<ClaimPassResult> {
    const { sql, redis, keys, directory, target } = this.#o;
    // Announced before this read, so visible in it (the controller publishes after its commit).
    const announced = new Map(this.#announced);
    const escrows = await readActiveEscrows(sql);
    const replicas = await directory.entries();
    const peers = replicas
      .filter((r) => r.fresh && r.replicaId !== directory.replicaId)
      .map((r) => r.replicaId);
    const liveReplicas = Math.max(
      1,
      replicas.length + (replicas.some((r) => r.replicaId === directory.replicaId) ? 0 : 1),
    );
    const ids = escrows.map((e) => e.escrowId);
    this.#known = new Set(ids);
    const leases = ids.length > 0 ? await redis.mget(...ids.map((id) => keys.escrowLease(id))) : [];
    const mine = target.owned();
    const leased = new Set(ids.filter((id, i) => leases[i] !== null || mine.has(id)));
    const leaseOwners = new Map<bigint, string>();
    ids.forEach((id, i) => {
      const owner = leases[i] ? parseLeaseValue(leases[i]!)?.replicaId : undefined;
      if (owner !== undefined) leaseOwners.set(id, owner);
    });
    const free = ids.filter((id) => !leased.has(id));
    const statuses =
      free.length > 0 ? await Promise.all(free.map((id) => redis.hget(keys.poolEscrow(id), 'status'))) : [];
    const faulted = new Set(free.filter((_, i) => statuses[i] === 'faulted'));

    const now = performance.now();
    const overdueAfter = this.#o.overdueAfterMs ?? 2_000;
    for (const id of [...this.#unownedSince.keys()])
      if (leased.has(id) || !ids.includes(id)) this.#unownedSince.delete(id);
    for (const id of free) if (!this.#unownedSince.has(id)) this.#unownedSince.set(id, now);
    const spreadDefer = this.#o.spreadDeferMs ?? this.#o.everyMs ?? 500;
    const due = new Set(free.filter((id) => now - this.#unownedSince.get(id)! >= spreadDefer));
    for (const [model, until] of [...this.#held]) if (until <= now) this.#held.delete(model);
    const grace = this.#o.announcedGraceMs ?? ANNOUNCED_GRACE_MS;
    const overdue = new Set(
      free.filter((id) => {
        if (now - this.#unownedSince.get(id)! >= overdueAfter) return true;
        const at = announced.get(id);
        return at !== undefined && now - at >= grace;
      }),
    );
    // An announced escrow still in its grace gets a pass when the grace ends; one that is owned,
    // faulted or not active is forgotten.
    this.#graceEndsAt = Number.POSITIVE_INFINITY;
    for (const [id, at] of announced) {
      if (!free.includes(id) || faulted.has(id)) this.#announced.delete(id);
      else if (!overdue.has(id)) this.#graceEndsAt = Math.min(this.#graceEndsAt, at + grace);
    }

    const plan = planClaims({
      replicaId: directory.replicaId,
      escrows,
      liveReplicas,
      mine,
      leased,
      faulted,
      overdue,
      peers,
      leaseOwners,
      due,
      held: new Set(this.#held.keys()),
    });
    // A deferred escrow gets a pass when its deferral runs out.
    for (const id of plan.deferred) {
      this.#graceEndsAt = Math.min(this.#graceEndsAt, this.#unownedSince.get(id)! + spreadDefer);
    }
    const released: bigint[] = [];
    for (const id of plan.release) {
      if (this.#releasing.has(id)) continue;
      this.#releasing.add(id);
      released.push(id);
      // A drain waits for live streams; the next passes must not wait for it.
      void target
        .drain(id)
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => this.#releasing.delete(id));
    }
    const claimed: bigint[] = [];
    for (const { modelId, want, escrows: candidates, afterDeferral } of plan.claim) {
      let got = 0;
      for (const escrow of candidates) {
        if (got >= want || this.#stopped) break;
        if (claimed.includes(escrow.escrowId)) continue;
        if (await target.claim(escrow)) {
          got++;
          claimed.push(escrow.escrowId);
          this.#unownedSince.delete(escrow.escrowId);
          // The peer it was left to did not take it: no spreading of this model for a while.
          if (afterDeferral)
            this.#held.set(modelId, performance.now() + (this.#o.spreadHoldMs ?? SPREAD_HOLD_MS));
        }
      }
    }
    return { claimed, released };
  }

  /** A pass now, or right after the one running (an announcement during a pass may be past its read). */
  #passSoon(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#schedule(0);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const run = this.pass()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => {
          if (this.#running === run) this.#running = undefined;
          const again = this.#again;
          this.#again = false;
          const untilGraceEnds = Math.max(0, this.#graceEndsAt - performance.now());
          this.#schedule(again ? 0 : Math.min(this.#o.everyMs ?? 500, untilGraceEnds));
        });
      this.#running = run;
    }, delayMs);
    this.#timer.unref();
  }
}
