// What the admin routes and jobs share: Postgres, Redis and its key names, the chain client, the
// session store, one TxSigner per creator key (each owns the monotonic unordered-tx timeout clock,
// chain-and-network.md §2.2), and the environment private_key_env names are read from.
import { type ChainClient, connectTxSigner, type PrivateKey, type TxSigner } from '@gonka-gateway/chain';
import type { Clock } from '@gonka-gateway/devshard/session';
import {
  HostDirectory,
  PostgresSessionStore,
  PostgresStoredHosts,
  WarmKeyDirectory,
} from '@gonka-gateway/escrow-runtime';
import type { Logger, RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import type { ControllerMetrics } from './controller-metrics.js';

export interface ControllerContext {
  sql: Sql;
  redis: Redis;
  keys: RedisKeys;
  chain: ChainClient;
  store: PostgresSessionStore;
  env: Readonly<Record<string, string | undefined>>;
  encryptionKey: Buffer | undefined;
  gasLimit: bigint;
  logger: Logger;
  /** Tx polling (chain-and-network.md §2.4 defaults: every 2 s for 45 s); tests poll faster. */
  poll: { intervalMs: number; timeoutMs: number };
  /** Wall clock of unordered-tx timeouts in ns; the devnet tests pass the devnet's clock. */
  nowNs?: () => bigint;
  signerFor(key: PrivateKey, chainId: string): Promise<TxSigner>;
  /** DEVSHARD_STORAGE_DIR: finalize documents are also copied under `finalize/` there. */
  storageDir: string;
  /** Lease holder id of this controller process (never reused after a restart; no ':'). */
  controllerId: string;
  /**
   * Hosts of the node's participants list, for the sessions the controller opens (finalize); an
   * escrow's stored participants (escrow_hosts) while the node is unreachable.
   */
  hosts: HostDirectory;
  /**
   * Warm keys of the hosts (authz grantees for MsgStartInference, chain-and-network.md §2.6 Settle 5):
   * finalize verifies the hosts' state signatures with them, so a host signing with its warm key
   * still counts towards the settlement quorum.
   */
  warmKeys: WarmKeyDirectory;
  /** Session clock (default the system clock); the devnet tests pass the devnet's. */
  sessionClock?: Clock;
  metrics?: ControllerMetrics;
  /** How long finalize waits for the owner to drain and release before answering 409 (default 30 s). */
  drainWaitMs: number;
  /**
   * Settle-window timing (upkeep/retire-by.ts): the rotation tick period (GATEWAY_ROTATION_TICK_MS)
   * and the room kept for finalize and the settle tx (GATEWAY_SETTLE_MARGIN_MS); defaults when unset.
   */
  settleTiming?: { tickMs: number; marginMs: number };
}

export function createControllerContext(
  base: Omit<ControllerContext, 'store' | 'signerFor' | 'hosts' | 'warmKeys'>,
): ControllerContext {
  const signers = new Map<string, Promise<TxSigner>>();
  return {
    ...base,
    store: new PostgresSessionStore(base.sql as never),
    hosts: new HostDirectory({
      client: base.chain,
      stored: new PostgresStoredHosts(base.sql),
      onStoredCopy: (use) => {
        base.metrics?.storedCopies.inc({ what: 'participants' });
        base.logger.warn(
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
      onError: (error) => base.logger.warn({ err: error.message }, 'storing the escrow participants failed'),
    }),
    warmKeys: new WarmKeyDirectory({
      client: base.chain,
      onError: (error) =>
        base.logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'reading warm keys failed',
        ),
    }),
    signerFor(key, chainId) {
      const id = `${chainId}/${key.address}`;
      let signer = signers.get(id);
      if (!signer) {
        signer = connectTxSigner(base.chain, key, {
          chainId,
          gasLimit: base.gasLimit,
          ...(base.nowNs ? { nowNs: base.nowNs } : {}),
        });
        signers.set(id, signer);
        // A failed connect (account not funded yet) must not be cached.
        signer.catch(() => signers.delete(id));
      }
      return signer;
    },
  };
}
