// Every Redis key the gateway uses, in one place (architecture.md §4). All keys share the
// configured prefix, so several gateways — or test files — can share one Redis.

export type RedisKeys = ReturnType<typeof redisKeys>;

export function redisKeys(prefix: string) {
  const k = (suffix: string) => `${prefix}${suffix}`;
  return {
    prefix,
    /** BullMQ `prefix` option; BullMQ appends `:<queue>:…` itself. */
    bullPrefix: k('bull'),
    /** Set of model ids that have escrows in the pool. */
    poolModels: k('pool:models'),
    /** Set of escrow ids serving one model. */
    poolModel: (modelId: string) => k(`pool:model:${modelId}`),
    /** Hash: the pool state of one escrow (see pool-state.ts). */
    poolEscrow: (escrowId: bigint) => k(`pool:escrow:${escrowId}`),
    /** Pub/sub channel announcing pool changes (payload: escrow id). */
    poolChanges: k('pool:changes'),
    /** Pub/sub channel announcing a settings change (payload: revision). */
    settingsChanges: k('settings:changes'),
    /**
     * Ownership lease of an escrow session (architecture §2.1): `${replicaId}:${fencingToken}` with a
     * TTL. Tokens are minted by Postgres (SessionStore.acquire), never by Redis.
     */
    escrowLease: (escrowId: bigint) => k(`lease:escrow:${escrowId}`),
    /** The controller leader lease (`${controllerId}:0` with a TTL): only its holder runs schedules. */
    controllerLeader: k('lease:controller-leader'),
    /**
     * Live proxy replicas (escrow-runtime claim/replica-directory.ts): sorted set replica id → when
     * its registration expires (Redis time, ms), refreshed by the replica; and hash replica id → its
     * internal URL.
     */
    replicas: k('replicas'),
    replicaUrls: k('replica-urls'),
    /** Sorted set of admitted requests (score = expiry), for the global concurrency limit. */
    admissionRequests: k('admission:requests'),
    /** Hash request id → estimated input tokens, for the input-tokens-in-flight limit. */
    admissionTokens: k('admission:tokens'),
    /** In-flight request count of one escrow across replicas. */
    escrowInFlight: (escrowId: bigint) => k(`inflight:escrow:${escrowId}`),
    /**
     * A forced settle's order to cut the escrow's in-flight requests (escrow-cut.ts): the cause,
     * with a TTL; its owner cuts them when it drains the escrow.
     */
    escrowCut: (escrowId: bigint) => k(`cut:escrow:${escrowId}`),
    /**
     * Per stored API key, touched only by the admission script (apps/proxy/src/chat/
     * admission.ts): requests and tokens of the last minute (zset ticket → time; hash ticket →
     * tokens), requests in flight (zset ticket → expiry), budget reservations in flight (zset ticket
     * → expiry; hash ticket → ngonka) and the spend counter of one budget period (ngonka).
     */
    keyRpm: (keyId: string) => k(`key:${keyId}:rpm`),
    keyTpm: (keyId: string) => k(`key:${keyId}:tpm`),
    keyTpmTokens: (keyId: string) => k(`key:${keyId}:tpm:tokens`),
    keyInFlight: (keyId: string) => k(`key:${keyId}:inflight`),
    keyReservations: (keyId: string) => k(`key:${keyId}:reserved`),
    keyReservationAmounts: (keyId: string) => k(`key:${keyId}:reserved:ngonka`),
    keySpend: (keyId: string, periodTag: string) => k(`key:${keyId}:spend:${periodTag}`),
    /**
     * Hash: where the chain is (epoch, phase, PoC state, blocks to the epoch switch), written by the
     * controller's chain-phase job for the proxies.
     */
    chainPhase: k('chain:phase'),
    /** Pub/sub channel announcing an epoch or phase change (payload: `epoch/phase`). */
    chainPhaseChanges: k('chain:phase:changes'),
    /**
     * Hash: the controller's estimate of the chain's block time (apps/controller chain/block-time.ts):
     * two reference samples (height, wall clock) and the ms per block between the older one and now.
     */
    chainBlockTime: k('chain:block-time'),
    /**
     * JSON (settle-window-summary.ts): the escrows whose settle window closed while the gateway's
     * records show them unsettled, written by the controller's rotation tick for /v1/status.
     */
    settleWindowClosed: k('settle-window:closed'),
    /** One rotation tick at a time across controllers (`SET NX PX`, holder token as value). */
    rotationTickLock: k('rotation:tick-lock'),
    /**
     * Fleet-wide serving health of one participant for one model (host-health.ts): a hash per
     * (model, participant), the set of `${model}|${participant}` members of every record, and the
     * pub/sub channel announcing an operator lift (payload: the member).
     */
    hostHealth: (model: string, participant: string) => k(`host:${model}:${participant}`),
    hostHealthIndex: k('hosts'),
    hostHealthChanges: k('hosts:changes'),
    /** Stream of usage events (one per completed chat request). */
    usageStream: k('usage'),
  };
}
