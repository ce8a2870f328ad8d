// The usage ledger's moving parts in one proxy replica (docs/keys-and-usage.md): the stream
// consumer that persists usage events (usage-writer.ts) and the reconciler that finalizes costs
// from the sessions this replica owns (cost-reconciler.ts). Started and stopped with the app.
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type postgres from 'postgres';
import { type CostCorrection, CostReconciler, type CostSource } from './cost-reconciler.js';
import { UsageWriter } from './usage-writer.js';

export interface UsageLedgerOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly sql: postgres.Sql;
  readonly replicaId: string;
  readonly sessions: CostSource;
  readonly reconcileEveryMs?: number;
  readonly claimIdleMs?: number;
  readonly onError?: (error: Error) => void;
  /** Budget counters follow rows that became final. */
  readonly onCorrections?: (corrections: readonly CostCorrection[]) => Promise<void>;
}

export class UsageLedger {
  readonly writer: UsageWriter;
  readonly reconciler: CostReconciler;

  constructor(o: UsageLedgerOptions) {
    const onError = o.onError ? { onError: o.onError } : {};
    this.writer = new UsageWriter({
      redis: o.redis,
      keys: o.keys,
      sql: o.sql,
      consumer: o.replicaId,
      ...(o.claimIdleMs !== undefined ? { claimIdleMs: o.claimIdleMs } : {}),
      ...onError,
    });
    this.reconciler = new CostReconciler({
      sql: o.sql,
      sessions: o.sessions,
      ...(o.reconcileEveryMs !== undefined ? { everyMs: o.reconcileEveryMs } : {}),
      ...(o.onCorrections ? { onCorrections: o.onCorrections } : {}),
      ...onError,
    });
  }

  async start(): Promise<void> {
    await this.writer.start();
    this.reconciler.start();
  }

  async stop(): Promise<void> {
    await this.reconciler.stop();
    await this.writer.stop();
  }
}
