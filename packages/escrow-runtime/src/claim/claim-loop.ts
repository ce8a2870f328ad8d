// The claim pass a replica runs every few hundred milliseconds (architecture §2.2): read the active
// escrows from Postgres, count live replicas, see which escrows are leased or faulted in Redis, then
// claim unowned ones up to this replica's fair share and hand back those it should not keep. After
// a replica dies (or Redis loses everything) its escrows are unleased within one TTL and claimed by
// the next passes of the survivors.
import { performance } from 'node:perf_hooks';
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
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
  readonly onError?: (error: Error) => void;
}

export interface ClaimPassResult {
  readonly claimed: bigint[];
  readonly released: bigint[];
}

export class ClaimLoop {
  readonly #o: ClaimLoopOptions;
  readonly #unownedSince = new Map<bigint, number>();
  readonly #releasing = new Set<bigint>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(options: ClaimLoopOptions) {
    this.#o = options;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Stops scheduling passes and waits for the one running. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** One pass (also callable directly, e.g. by tests or right after start-up). */
  async pass(): Promise<ClaimPassResult> {
    const { sql, redis, keys, directory, target } = this.#o;
    const escrows = await readActiveEscrows(sql);
    const replicas = await directory.live();
    const liveReplicas = Math.max(
      1,
      replicas.length + (replicas.some((r) => r.replicaId === directory.replicaId) ? 0 : 1),
    );
    const ids = escrows.map((e) => e.escrowId);
    const leases = ids.length > 0 ? await redis.mget(...ids.map((id) => keys.escrowLease(id))) : [];
    const mine = target.owned();
    const leased = new Set(ids.filter((id, i) => leases[i] !== null || mine.has(id)));
    const free = ids.filter((id) => !leased.has(id));
    const statuses =
      free.length > 0 ? await Promise.all(free.map((id) => redis.hget(keys.poolEscrow(id), 'status'))) : [];
    const faulted = new Set(free.filter((_, i) => statuses[i] === 'faulted'));

    const now = performance.now();
    const overdueAfter = this.#o.overdueAfterMs ?? 2_000;
    for (const id of [...this.#unownedSince.keys()])
      if (leased.has(id) || !ids.includes(id)) this.#unownedSince.delete(id);
    for (const id of free) if (!this.#unownedSince.has(id)) this.#unownedSince.set(id, now);
    const overdue = new Set(free.filter((id) => now - this.#unownedSince.get(id)! >= overdueAfter));

    const plan = planClaims({
      replicaId: directory.replicaId,
      escrows,
      liveReplicas,
      mine,
      leased,
      faulted,
      overdue,
    });
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
    for (const { want, escrows: candidates } of plan.claim) {
      let got = 0;
      for (const escrow of candidates) {
        if (got >= want || this.#stopped) break;
        if (await target.claim(escrow)) {
          got++;
          claimed.push(escrow.escrowId);
          this.#unownedSince.delete(escrow.escrowId);
        }
      }
    }
    return { claimed, released };
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      const run = this.pass()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => {
          if (this.#running === run) this.#running = undefined;
          this.#schedule(this.#o.everyMs ?? 500);
        });
      this.#running = run;
    }, delayMs);
    this.#timer.unref();
  }
}
