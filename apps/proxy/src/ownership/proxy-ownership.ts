// The escrow-runtime's ownership runtime running inside a proxy replica (architecture §2): claims
// its share of active escrows, owns their sessions on the Postgres store, registers the replica's
// internal URL (GATEWAY_PROXY_INTERNAL_URL, GATEWAY_REPLICA_ID) so other replicas can forward to
// it. An escrow's participants are stored in Postgres once its session opened with the node's
// answer, so a takeover or a restart while the public node is down opens it from that copy
// (HostDirectory; marker `node_unreachable_stored_copy`, docs/operator-guide.md "When the public
// node is down").
import type { HostTarget, SessionEvent } from '@gonka-gateway/devshard/session';
import {
  ApprovedVersions,
  ChainMaxNonce,
  creatorKeyFromEnv,
  HostDirectory,
  OwnershipRuntime,
  PostgresSessionStore,
  PostgresStoredHosts,
  WarmKeyDirectory,
} from '@gonka-gateway/escrow-runtime';
import {
  chainClientFor,
  type GatewayConfig,
  type Logger,
  openPlainPool,
  redisKeys,
} from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type postgres from 'postgres';
import { isPrivateHostUrl } from './host-address-policy.js';

export interface ProxyOwnershipOptions {
  readonly config: GatewayConfig;
  readonly sql: postgres.Sql;
  readonly redis: Redis;
  /**
   * Where creator keys are read (DEVSHARD_PRIVATE_KEY, escrows.signer_key_env); keys stored encrypted
   * (escrows.signer_key_encrypted) are opened with config.encryptionKey (GATEWAY_ENCRYPTION_KEY).
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly leaseTtlMs?: number;
  /** Allow loopback/private host addresses (devnet, tests). */
  readonly allowPrivateHosts?: boolean;
  /** Pending host txs flushed after this long without a request (default 10 s). */
  readonly flushIdleMs?: number;
  readonly maintenanceEveryMs?: number;
  /**
   * The app's subscriber connection: the claim loop follows `pool:changes` on it, so an escrow the
   * controller registers or activates is claimed on the announcement, not on the next claim pass.
   */
  readonly subscriber?: Redis;
  readonly log?: Logger;
  /** Every session event of every owned escrow (the proxy's metrics). */
  readonly onSessionEvent?: (escrowId: bigint, event: SessionEvent) => void;
  /** A session opens from its stored participants because the node did not answer (the metric). */
  readonly onStoredCopy?: () => void;
}

export interface ProxyOwnership {
  readonly runtime: OwnershipRuntime;
  /** The chain's approved_versions as last read (GET /v1/status; claims refuse unapproved ones). */
  readonly versions: ApprovedVersions;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createProxyOwnership(options: ProxyOwnershipOptions): ProxyOwnership {
  const { config } = options;
  // The session store's own pool, not drizzle's handle (see openPlainPool).
  const storeSql = openPlainPool(config.databaseUrl, {
    max: 8,
    applicationName: `proxy-${config.proxy.replicaId}-store`,
  });
  const client = chainClientFor(config, { timeoutMs: 10_000 });
  const log = options.log;
  const hosts = new HostDirectory({
    client,
    minRefreshMs: 1_000,
    stored: new PostgresStoredHosts(storeSql),
    onStoredCopy: (use) => {
      options.onStoredCopy?.();
      log?.warn(
        {
          marker: 'node_unreachable_stored_copy',
          what: 'participants',
          escrowId: use.escrowId.toString(),
          hosts: use.hosts,
          err: use.error instanceof Error ? use.error.message : String(use.error),
        },
        'public node unreachable: the session opens with its stored participants',
      );
    },
    onError: (error) => log?.warn({ err: error }, 'storing the escrow participants failed'),
  });
  // An escrow bound to a runtime the chain no longer approves is not claimed (devshard-protocol.md
  // §1, §4.1); marker `escrow_version_unsupported`, pool status `unsupported_version`.
  const versions = new ApprovedVersions({
    client,
    onError: (error) => log?.warn({ err: error }, 'reading the approved protocol versions failed'),
  });
  const maxNonces = new ChainMaxNonce({ client });
  // Hosts may sign with a warm key, an authz grantee of their cold address for MsgStartInference
  // (chain-and-network.md §2.6 Settle 5, devshard-protocol.md §5.7): read before a session opens,
  // refreshed in the background; a failed read keeps the last answer and never blocks serving.
  const warmKeys = new WarmKeyDirectory({
    client,
    onError: (error) =>
      log?.warn({ err: error instanceof Error ? error.message : String(error) }, 'reading warm keys failed'),
  });
  const resolveHost = (address: string, version: string): HostTarget | undefined => {
    const target = hosts.resolve(address, version);
    if (!target || options.allowPrivateHosts || !isPrivateHostUrl(target.baseUrl)) return target;
    log?.warn({ address }, 'host address refused: loopback, link-local or private');
    return undefined;
  };
  const runtime = new OwnershipRuntime({
    sql: options.sql,
    redis: options.redis,
    keys: redisKeys(config.redis.keyPrefix),
    replicaId: config.proxy.replicaId,
    url: config.proxy.internalUrl,
    leaseTtlMs: options.leaseTtlMs ?? 10_000,
    store: new PostgresSessionStore(storeSql),
    signerFor: creatorKeyFromEnv(options.env, { encryptionKey: config.encryptionKey }),
    resolveHost,
    prepare: async (escrow) => {
      await Promise.all([hosts.prepareFor(escrow.escrowId), warmKeys.prepareFor(escrow.escrowId)]);
    },
    session: { isWarmKey: warmKeys.isWarmKey },
    versionRefusal: (version) => versions.refusal(version),
    // Records stored without the escrow's max_nonce: read from the chain (§7.5, ChainMaxNonce).
    maxNonceOf: (escrowId) => maxNonces.of(escrowId),
    opened: (escrowId, participants) => {
      hosts.remember(escrowId, participants);
      warmKeys.track(escrowId, participants);
    },
    released: (escrowId) => {
      hosts.forget(escrowId);
      warmKeys.forget(escrowId);
    },
    ...(options.flushIdleMs !== undefined ? { flushIdleMs: options.flushIdleMs } : {}),
    ...(options.maintenanceEveryMs !== undefined ? { maintenanceEveryMs: options.maintenanceEveryMs } : {}),
    ...(options.onSessionEvent ? { onSessionEvent: options.onSessionEvent } : {}),
    ...(options.subscriber ? { subscriber: options.subscriber } : {}),
    ...(log ? { log } : {}),
  });
  return {
    runtime,
    versions,
    start: () => runtime.start(),
    async close() {
      await runtime.close();
      warmKeys.close();
      await storeSql.end({ timeout: 5 });
    },
  };
}
