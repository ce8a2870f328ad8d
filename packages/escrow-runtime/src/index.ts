// One writer per escrow across processes (architecture §2): the Postgres session store, Redis
// leases fenced by Postgres tokens, claiming, takeover and drain. Used by the proxy replicas and the
// controller alike; packages/devshard stays free of Postgres and Redis. Named re-exports only.
export { boundedRedis } from './bounded-redis.js';
export { type ActiveEscrow, readActiveEscrows, recordEscrowFault } from './claim/active-escrows.js';
export {
  ClaimLoop,
  type ClaimLoopOptions,
  type ClaimPassResult,
  type ClaimTarget,
} from './claim/claim-loop.js';
export { type ClaimPlan, type ClaimPlanInput, planClaims } from './claim/fair-share.js';
export {
  type LiveReplica,
  ReplicaDirectory,
  type ReplicaDirectoryOptions,
} from './claim/replica-directory.js';
export {
  EscrowLease,
  type EscrowLeaseOptions,
  type LeaseLossReason,
  LeaseLostError,
  leaseValue,
  parseLeaseValue,
} from './lease/escrow-lease.js';
export {
  ApprovedVersions,
  type ApprovedVersionsOptions,
  type ProtocolVersionsView,
} from './owned/approved-versions.js';
export { ChainMaxNonce, type ChainMaxNonceOptions } from './owned/chain-max-nonce.js';
export {
  CreatorKeyError,
  type CreatorKeyOptions,
  type CreatorKeySource,
  creatorKeyFromEnv,
  creatorKeyOf,
  openCreatorKey,
} from './owned/creator-key.js';
export { HostDirectory, type HostDirectoryOptions, type StoredCopyUse } from './owned/host-directory.js';
export {
  NotOwnedError,
  type OwnedEscrowInfo,
  type OwnedInferenceEvent,
  type OwnedInferenceResult,
  OwnedSessions,
  type OwnedSessionsOptions,
  type SessionTuning,
} from './owned/owned-sessions.js';
export { PoolPublisher, type PublishedState } from './owned/pool-publisher.js';
export { PostgresStoredHosts, type StoredHosts } from './owned/stored-hosts.js';
export { WarmKeyDirectory, type WarmKeyDirectoryOptions } from './owned/warm-keys.js';
export { OwnershipRuntime, type OwnershipRuntimeOptions } from './ownership-runtime.js';

// The store's group commit, also what the protocol-floor bench shares its statements with.
export { type Carried, GroupCommit, type GroupCommitOptions } from './store/group-commit.js';
// Postgres SessionStore (§2.1 tokens minted at acquire, §2.3 fenced write-ahead, §2.5 snapshots).
export { PostgresSessionStore } from './store/postgres-session-store.js';
