// One replica's ownership machinery wired together (architecture §2): the replica directory entry,
// the registry of owned sessions and the claim loop, on a Redis connection of its own whose commands
// time out (bounded-redis.ts). The proxy and the owner node of the tests build
// it the same way; `close()` hands every escrow back (drain) before the replica leaves.
import { closeRedis, type Logger } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import { boundedRedis } from './bounded-redis.js';
import { ClaimLoop } from './claim/claim-loop.js';
import { ReplicaDirectory } from './claim/replica-directory.js';
import { OwnedSessions, type OwnedSessionsOptions } from './owned/owned-sessions.js';

export interface OwnershipRuntimeOptions extends Omit<OwnedSessionsOptions, 'log'> {
  readonly sql: Sql;
  /** This replica's internal URL (other replicas forward to it). */
  readonly url: string;
  /** Replica registration TTL (default: the lease TTL). */
  readonly replicaTtlMs?: number;
  /** Claim pass period (default TTL/3). */
  readonly claimEveryMs?: number;
  /** Unowned this long → claimed beyond the fair share (default: the lease TTL). */
  readonly overdueAfterMs?: number;
  /**
   * A connection in subscriber mode (may be shared) on which the claim loop follows `pool:changes`,
   * so a newly registered or activated escrow is claimed at once (claim-loop.ts). Not closed here.
   */
  readonly subscriber?: Redis;
  /** How long an announced escrow waits for a replica below its share (ClaimLoop, default 250 ms). */
  readonly announcedGraceMs?: number;
  /**
   * Every Redis command of the runtime fails after this long (default TTL/3, at least 100 ms), so
   * claiming and close() go on while Redis is down. The runtime opens its own connection for it.
   */
  readonly redisCommandTimeoutMs?: number;
  readonly log?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

export class OwnershipRuntime {
  readonly sessions: OwnedSessions;
  readonly directory: ReplicaDirectory;
  readonly claims: ClaimLoop;
  /** The runtime's own connection (boundedRedis), closed by close(). */
  readonly redis: Redis;

  constructor(options: OwnershipRuntimeOptions) {
    const onError = (error: Error) => options.log?.warn({ err: error }, 'ownership background task failed');
    const redis = boundedRedis(
      options.redis,
      options.redisCommandTimeoutMs ?? Math.max(100, Math.floor(options.leaseTtlMs / 3)),
    );
    this.redis = redis;
    this.sessions = new OwnedSessions({ ...options, redis });
    this.directory = new ReplicaDirectory({
      redis,
      keys: options.keys,
      replicaId: options.replicaId,
      url: options.url,
      ttlMs: options.replicaTtlMs ?? options.leaseTtlMs,
      onError,
    });
    this.claims = new ClaimLoop({
      sql: options.sql,
      redis,
      keys: options.keys,
      directory: this.directory,
      target: this.sessions,
      everyMs: options.claimEveryMs ?? Math.max(50, Math.floor(options.leaseTtlMs / 3)),
      overdueAfterMs: options.overdueAfterMs ?? options.leaseTtlMs,
      ...(options.subscriber ? { subscriber: options.subscriber } : {}),
      ...(options.announcedGraceMs !== undefined ? { announcedGraceMs: options.announcedGraceMs } : {}),
      onError,
    });
  }

  async start(): Promise<void> {
    await this.directory.start();
    await this.claims.start();
  }

  /** Stops claiming, leaves the directory (others take the share at once), drains every session. */
  async close(): Promise<void> {
    await this.claims.stop();
    await this.directory.stop();
    await this.sessions.close();
    await closeRedis(this.redis);
  }
}
