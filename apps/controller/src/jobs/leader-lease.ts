// One active controller (apps/controller/README.md, "One active controller"): several controllers
// may run, one as the leader and the others as standbys. Leadership is a Redis lease — the escrow
// lease of packages/escrow-runtime (SET NX PX, compare-and-set renewal, a local deadline before the
// TTL can run out) under the key controllerLeader — and only its holder registers and runs the
// BullMQ schedules (reconcile, depletion check, rotation tick…); every controller serves the admin
// API and runs the on-demand jobs (settle), which are idempotent. A standby tries to take the lease
// every third of its TTL, so it takes over within about one TTL of the leader's death. A lease lost
// to a Redis that came back empty (FLUSHALL, a restart without persistence) is taken again at once,
// and taking it runs `onLead` again: the schedules are registered anew and the pool is rebuilt from
// Postgres.
import { EscrowLease, type LeaseLossReason } from '@gonka-gateway/escrow-runtime';
import type { Logger, RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

export interface LeaderLeaseOptions {
  redis: Redis;
  keys: RedisKeys;
  /** This process's id (unique per start, no ':'). */
  controllerId: string;
  ttlMs: number;
  logger: Logger;
  /** Became the leader: register schedules, start their workers, rebuild the pool. */
  onLead(): Promise<void>;
  /** Lost the lead (another controller has it, or Redis lost the key): stop the schedule workers. */
  onFollow(reason: LeaseLossReason): Promise<void>;
}

export class LeaderLease {
  readonly #o: LeaderLeaseOptions;
  #lease: EscrowLease | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Serialises lead/follow changes so onLead and onFollow never overlap. */
  #change: Promise<void> = Promise.resolve();

  constructor(options: LeaderLeaseOptions) {
    this.#o = options;
  }

  get leading(): boolean {
    return this.#lease !== undefined && this.#lease.lost === undefined;
  }

  /** Tries at once, then every third of the TTL while not leading. */
  async start(): Promise<void> {
    await this.#attempt();
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#change;
    const lease = this.#lease;
    this.#lease = undefined;
    await lease?.release();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => void this.#attempt().finally(() => this.#schedule()),
      Math.max(50, Math.floor(this.#o.ttlMs / 3)),
    );
    this.#timer.unref();
  }

  async #attempt(): Promise<void> {
    if (this.#stopped || this.leading) return;
    const { redis, keys, controllerId, ttlMs, logger } = this.#o;
    let lease: EscrowLease | undefined;
    try {
      lease = await EscrowLease.acquire({
        redis,
        keys,
        // The leader lease belongs to no escrow; 0 is no escrow's id (chain ids start at 1).
        escrowId: 0n,
        key: keys.controllerLeader,
        replicaId: controllerId,
        ttlMs,
        onLost: (reason) => this.#follow(reason),
      });
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'controller leader lease: Redis unreachable');
      return;
    }
    if (!lease) return;
    this.#lease = lease;
    logger.info(
      { controllerId, marker: 'controller_leader_acquired' },
      'this controller leads: schedules run here',
    );
    this.#change = this.#change.then(async () => {
      try {
        await this.#o.onLead();
      } catch (err) {
        // Leading without running the schedules would stall them for everyone: hand the lease
        // back (the next attempt, here or on a standby, starts over).
        logger.error({ err: (err as Error).message }, 'controller leader start failed; lease released');
        if (this.#lease === lease) this.#lease = undefined;
        await lease.release();
        await this.#o.onFollow('released').catch(() => undefined);
      }
    });
    await this.#change;
  }

  #follow(reason: LeaseLossReason): void {
    this.#o.logger.warn(
      { controllerId: this.#o.controllerId, reason, marker: 'controller_leader_lost' },
      'controller leader lease lost: schedules stop here',
    );
    this.#change = this.#change.then(() =>
      this.#o
        .onFollow(reason)
        .catch((err: Error) => this.#o.logger.error({ err: err.message }, 'controller leader stop failed')),
    );
  }
}
