// The sessions this replica owns (architecture §2): one Redis lease + one UserSession per escrow.
//
// claim:  lease SET NX → UserSession.open (store.acquire mints the Postgres fencing token, replay,
//         takeover mempool reads) → lease value := `${replica}:${token}` (compare-and-set) → pool
//         state says we own it. The lease's guard is the session's writeGuard, so no fenced write
//         leaves this process once the lease may have expired (§2.1).
// lost:   lease lost or session faulted with `ownership_lost` → out of routing at once, the entry is
//         removed (another claim may start), the session is closed in the background.
// fault:  any other fault (a breaker: divergence, every host rejected a fresh diff, corrupt store)
//         → pool status `faulted` with the cause, logged, closed, lease released; the claim loop
//         never re-claims a faulted escrow.
// drain:  no new requests, in-flight requests with their receipt/meta tails and pending saves
//         finish (UserSession.drain), then the lease is released so the controller can take the
//         escrow for finalize (§2.6).
// cut:    a forced settle (the controller's cut order in Redis, shared escrow-cut.ts) seen while
//         draining: in-flight requests end at once instead of finishing, with the cause in their
//         result (`cut`) and the marker `escrow_requests_cut`; the drain then completes as above.
import { performance } from 'node:perf_hooks';
import type { PrivateKey } from '@gonka-gateway/chain';
import {
  type HostTarget,
  type HostTransport,
  HttpHostTransport,
  type InferenceCost,
  InferenceCut,
  type InferenceHandlers,
  type InferenceInput,
  type InferenceResult,
  isSessionError,
  reservedTotal,
  type ServedCounts,
  type SessionError,
  SessionErrorCode,
  type SessionEvent,
  type SessionStore,
  systemClock,
  UserSession,
  type UserSessionOptions,
} from '@gonka-gateway/devshard/session';
import { escrowCutOrder, type Logger, nonceRoutingStop, type RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import { type ActiveEscrow, recordEscrowFault } from '../claim/active-escrows.js';
import type { ClaimTarget } from '../claim/claim-loop.js';
import { EscrowLease, type LeaseLossReason } from '../lease/escrow-lease.js';
import { type InferenceEvent, inferenceEvents } from './inference-events.js';
import { PoolPublisher } from './pool-publisher.js';

/** Session options the registry does not decide itself (clock, max_nonce, timeouts…). */
export type SessionTuning = Omit<
  UserSessionOptions,
  'store' | 'escrowId' | 'signer' | 'transport' | 'resolveHost' | 'writeGuard' | 'onEvent'
>;

export interface OwnedSessionsOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  /** Unique per process start; no ':'. */
  readonly replicaId: string;
  /**
   * Lease TTL (seconds in production, e.g. 10 000; tests use ~1 500). Replay yields to the event loop
   * every few tens of milliseconds, so the lease renews while a long session opens.
   */
  readonly leaseTtlMs: number;
  readonly leaseSafetyMarginMs?: number;
  readonly store: SessionStore;
  /** The escrow's creator key (creatorKeyFromEnv). */
  readonly signerFor: (escrow: ActiveEscrow) => PrivateKey;
  /** Host of a cold address for a runtime version (HostDirectory.resolve). */
  readonly resolveHost: (address: string, version: string) => HostTarget | undefined;
  /**
   * Called before a session opens, e.g. to load the participants list, or the escrow's stored copy of
   * it while the node is unreachable (HostDirectory.prepareFor).
   */
  readonly prepare?: (escrow: ActiveEscrow) => Promise<void>;
  /**
   * The escrow's max_nonce from the chain (its row's, else the params'; ChainMaxNonce), asked only for
   * a session whose record was stored without one; throws while the chain cannot answer. Until an
   * answer the session stops at the 20,000 default and the pool entry says the ceiling is unknown
   * (the controller holds the escrow at the routing stop instead of retiring it); maintenance asks
   * again, and the session adopts the answer (UserSession.adoptMaxNonce).
   */
  readonly maxNonceOf?: (escrowId: bigint) => Promise<bigint>;
  /**
   * Why an escrow bound to runtime `version` must not be served (the chain does not approve it,
   * devshard-protocol.md §1; ApprovedVersions.refusal), or undefined. Asked before the lease is taken:
   * such an escrow is left unclaimed, its pool entry says `unsupported_version` with the cause, the
   * marker `escrow_version_unsupported` is logged once per cause, and a later claim serves it as
   * soon as the chain approves its version again.
   */
  readonly versionRefusal?: (version: string) => Promise<string | undefined>;
  /** A session opened and serves: its group's participants (slot holders), e.g. HostDirectory.remember. */
  readonly opened?: (escrowId: bigint, participants: readonly string[]) => void;
  /** A session this registry owned has closed and its lease is released (HostDirectory.forget). */
  readonly released?: (escrowId: bigint) => void;
  /** Default: HttpHostTransport signed with the creator key on the session clock. */
  readonly transportFor?: (signer: PrivateKey) => HostTransport;
  readonly session?: SessionTuning;
  /** Period of checkTimeouts + idle flush + pool progress (default 2 s). */
  readonly maintenanceEveryMs?: number;
  /** Pending host txs are flushed in a diff of their own after this long without a request (default 10 s). */
  readonly flushIdleMs?: number;
  /**
   * Where a fault is recorded for good (escrows.active = false, last_error = the cause), so that no
   * replica claims the escrow again even after Redis lost the pool's `faulted` status.
   */
  readonly sql?: Sql;
  readonly log?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Every session event of every owned escrow (metrics, tests). */
  readonly onSessionEvent?: (escrowId: bigint, event: SessionEvent) => void;
}

/** An inference's result here: `cut` names the cause when a forced settle cut it (#cut). */
export interface OwnedInferenceResult extends InferenceResult {
  readonly cut?: string;
}

export type OwnedInferenceEvent = InferenceEvent<OwnedInferenceResult>;

export class NotOwnedError extends Error {
  override name = 'NotOwnedError';
  constructor(escrowId: bigint, why: string) {
    super(`escrow ${escrowId} is not served here (${why})`);
  }
}

/** How often a draining escrow with requests in flight looks for a cut order (#watchCut). */
const CUT_POLL_MS = 200;

/** A failed read of an escrow's max_nonce is tried again after this long (#learnMaxNonce). */
const MAX_NONCE_RETRY_MS = 30_000;

/** Pool progress after requests is written at most this often per escrow (#publishProgressSoon). */
const PROGRESS_EVERY_MS = 200;
/**
 * Maintenance writes progress that did not change only this often: each write is a Redis script and
 * a `pool:changes` message that makes every replica re-read the pool (an idle fleet otherwise read
 * it for nothing every maintenance period). The rare rewrite still corrects a pool entry another
 * writer (the controller's rebuild) got wrong.
 */
const UNCHANGED_PROGRESS_EVERY_MS = 30_000;

type EntryState = 'opening' | 'serving' | 'draining' | 'gone';

interface Entry {
  readonly escrow: ActiveEscrow;
  readonly lease: EscrowLease;
  session: UserSession | undefined;
  state: EntryState;
  lastRequestAt: number;
  /** When progress was last written to the pool, and the trailing write waiting for its turn. */
  progressAt: number;
  progressTimer: NodeJS.Timeout | undefined;
  /** `nonce/balance/reserved` the pool last accepted from us, and when (maintenance skips an unchanged one). */
  publishedProgress: string | undefined;
  publishedAt: number;
  /** One controller per request in flight here: a cut aborts them all (#cut). */
  readonly requests: Set<AbortController>;
  /** Set once a forced settle cut this escrow's requests (keys.escrowCut): the cause. */
  cutCause: string | undefined;
  /** Set once when the entry leaves (lost, faulted, drained, closed): waits for the session to stop. */
  ended: Promise<void> | undefined;
}

export interface OwnedEscrowInfo {
  readonly escrowId: bigint;
  readonly modelId: string;
  readonly state: EntryState;
  readonly fencingToken: bigint | undefined;
  readonly nonce: bigint | undefined;
  readonly inFlight: number;
  /** Routing inputs for the proxy: absent while the session is opening. */
  readonly routable: boolean;
  readonly canStart: boolean;
  readonly balance: bigint | undefined;
  readonly capacityWeight: number;
  readonly tokenPrice: bigint | undefined;
  readonly feePerNonce: bigint | undefined;
  readonly maxTokensFloor: bigint | undefined;
  /** The escrow's max_nonce as the session knows it; undefined while unknown or opening. */
  readonly nonceCeiling?: bigint | undefined;
  /** Where routing stops for the nonce (nonceRoutingStop); undefined while opening. */
  readonly routingStop?: bigint | undefined;
  /**
   * Hosts of the group holding ≥ N − vote_threshold slots (they cannot be outvoted; devshard
   * dominant-hosts.ts), and those of them blocked after a refusal or timeout (their nonces are
   * burned fee-only). 0 while the session is opening.
   */
  readonly dominantHosts: number;
  readonly blockedHosts: number;
  /** Served-bytes verdicts summed over the escrow's hosts (devshard served-bytes.ts). */
  readonly served: Readonly<ServedCounts>;
  /** Slots per participant (cold address) of the escrow's group; undefined while opening. */
  readonly slotCount: ReadonlyMap<string, number> | undefined;
  /** The executor of the next nonce (slot nonce mod N, devshard-protocol.md §1); undefined while opening. */
  readonly nextExecutor: string | undefined;
}

export class OwnedSessions implements ClaimTarget {
  readonly #o: OwnedSessionsOptions;
  readonly #publisher: PoolPublisher;
  readonly #entries = new Map<bigint, Entry>();
  /** Sessions still stopping after their entry left (so close() waits for them too). */
  readonly #ending = new Set<Promise<void>>();
  /** Escrows left unclaimed for their runtime version, with the cause last reported (#declineVersion). */
  readonly #versionRefused = new Map<bigint, string>();
  /** maxNonceOf reads in progress, and when each escrow was last asked (#learnMaxNonce). */
  readonly #maxNonceReads = new Map<bigint, Promise<void>>();
  readonly #maxNonceTriedAt = new Map<bigint, number>();
  #maintenance: NodeJS.Timeout | undefined;
  #maintaining = false;
  #closed = false;

  constructor(options: OwnedSessionsOptions) {
    this.#o = options;
    this.#publisher = new PoolPublisher(options.redis, options.keys);
    this.#scheduleMaintenance();
  }

  get replicaId(): string {
    return this.#o.replicaId;
  }

  owned(): ReadonlySet<bigint> {
    return new Set(this.#entries.keys());
  }

  list(): OwnedEscrowInfo[] {
    return [...this.#entries.values()].map((e) => ({
      escrowId: e.escrow.escrowId,
      modelId: e.escrow.modelId,
      state: e.state,
      fencingToken: e.session?.fencingToken,
      nonce: e.session?.latestNonce,
      inFlight: e.session?.inFlight ?? 0,
      routable: this.#routable(e),
      // New work stops at the routing stop the pool entry announces (shared nonce-routing.ts), a few
      // nonces before the session's own work limit once the ceiling is known.
      canStart: e.session ? e.session.canStartInference && belowRoutingStop(e.session) : false,
      balance: e.session?.balance,
      capacityWeight: e.session?.state.group.slots.length ?? 0,
      tokenPrice: e.session?.state.config.tokenPrice,
      feePerNonce: e.session?.state.config.feePerNonce,
      maxTokensFloor: e.session?.state.config.maxTokensFloor,
      ...nonceLimits(e.session),
      slotCount: e.session?.state.group.slotCount,
      nextExecutor: e.session ? nextExecutorOf(e.session) : undefined,
      ...hostQuality(e.session),
    }));
  }

  /** The cost of inference `nonce` on an owned escrow (UserSession.inferenceCost); undefined when not open here. */
  inferenceCost(escrowId: bigint, nonce: bigint): InferenceCost | undefined {
    return this.#entries.get(escrowId)?.session?.inferenceCost(nonce);
  }

  /** A serving escrow of `modelId` with the fewest requests in flight, or undefined. */
  pick(modelId: string): bigint | undefined {
    let best: Entry | undefined;
    for (const e of this.#entries.values()) {
      if (e.escrow.modelId !== modelId || !this.#routable(e)) continue;
      if (!best || e.session!.inFlight < best.session!.inFlight) best = e;
    }
    return best?.escrow.escrowId;
  }

  /**
   * Runs one inference on an owned, serving escrow (NotOwnedError otherwise; SessionError before
   * compose). A request a forced settle cuts (#cut) before its nonce is taken is a NotOwnedError
   * (another escrow may serve it); one cut later answers with `cut` set to the cause.
   */
  async infer(
    escrowId: bigint,
    input: InferenceInput,
    handlers: InferenceHandlers = {},
  ): Promise<OwnedInferenceResult> {
    const e = this.#entries.get(escrowId);
    if (!e) throw new NotOwnedError(escrowId, 'not owned');
    if (!this.#routable(e)) throw new NotOwnedError(escrowId, e.lease.lost ? 'lease lost' : e.state);
    e.lastRequestAt = performance.now();
    // The session sees one signal: the caller's (a client that left) or the owner's cut.
    const request = new AbortController();
    const caller = handlers.signal;
    const callerLeft = () => request.abort(caller?.reason);
    if (caller?.aborted) callerLeft();
    else caller?.addEventListener('abort', callerLeft, { once: true });
    e.requests.add(request);
    try {
      const result = await e.session!.infer(input, { ...handlers, signal: request.signal });
      const cut = request.signal.reason instanceof InferenceCut ? request.signal.reason.code : undefined;
      return cut === undefined ? result : { ...result, cut };
    } catch (error) {
      if (request.signal.reason instanceof InferenceCut && isSessionError(error)) {
        throw new NotOwnedError(escrowId, `cut: ${request.signal.reason.code}`);
      }
      throw error;
    } finally {
      e.requests.delete(request);
      caller?.removeEventListener('abort', callerLeft);
      e.lastRequestAt = performance.now();
      this.#publishProgressSoon(e);
    }
  }

  /**
   * infer() as a stream of typed events in batches (inference-events.ts) ending with its `result`
   * or `refused`: what the proxy's attempts consume.
   */
  inferenceEvents(
    escrowId: bigint,
    input: InferenceInput,
    options: { readonly signal?: AbortSignal } = {},
  ): AsyncGenerator<readonly OwnedInferenceEvent[], void, undefined> {
    return inferenceEvents((handlers) => this.infer(escrowId, input, { ...handlers, ...options }));
  }

  async claim(escrow: ActiveEscrow): Promise<boolean> {
    const id = escrow.escrowId;
    if (this.#closed || this.#entries.has(id)) return false;
    if (await this.#declineVersion(escrow)) return false;
    const lease = await EscrowLease.acquire({
      redis: this.#o.redis,
      keys: this.#o.keys,
      escrowId: id,
      replicaId: this.#o.replicaId,
      ttlMs: this.#o.leaseTtlMs,
      ...(this.#o.leaseSafetyMarginMs !== undefined ? { safetyMarginMs: this.#o.leaseSafetyMarginMs } : {}),
      onLost: (reason) => this.#leaseLost(id, reason),
    });
    if (!lease) return false;
    const entry: Entry = {
      escrow,
      lease,
      session: undefined,
      state: 'opening',
      lastRequestAt: performance.now(),
      progressAt: Number.NEGATIVE_INFINITY,
      progressTimer: undefined,
      publishedProgress: undefined,
      publishedAt: Number.NEGATIVE_INFINITY,
      ended: undefined,
      requests: new Set(),
      cutCause: undefined,
    };
    if (this.#closed || this.#entries.has(id)) {
      await lease.release();
      return false;
    }
    this.#entries.set(id, entry);
    const openedAt = performance.now();
    try {
      const signer = this.#o.signerFor(escrow);
      await this.#o.prepare?.(escrow);
      const clock = this.#o.session?.clock ?? systemClock;
      const transport =
        this.#o.transportFor?.(signer) ?? new HttpHostTransport({ signer, nowSeconds: clock.nowSeconds });
      // Renewal keeps running while the session replays (a long session takes a while to open).
      const session = await UserSession.open({
        ...this.#o.session,
        store: this.#o.store,
        escrowId: id,
        signer,
        transport,
        resolveHost: this.#o.resolveHost,
        writeGuard: lease.guard,
        onEvent: (event) => this.#sessionEvent(id, event),
      });
      entry.session = session;
      if (entry.state !== 'opening') {
        // Lost (or closed) while opening: the session never served. A lease that expired during
        // the open means the TTL is shorter than a replay of this session: say so.
        this.#o.log?.warn(
          {
            escrowId: id.toString(),
            openMs: Math.round(performance.now() - openedAt),
            ttlMs: this.#o.leaseTtlMs,
          },
          'escrow lease lost while its session was opening',
        );
        await session.close().catch(() => undefined);
        return false;
      }
      await lease.setToken(session.fencingToken);
      const published = await this.#publisher.owned(
        {
          escrowId: id,
          modelId: escrow.modelId,
          status: 'active',
          capacityWeight: session.state.group.slots.length,
          balanceEstimate: session.balance,
          reserved: reservedTotal(session.state),
          nonce: session.latestNonce,
          ...nonceLimits(session),
          owner: this.#o.replicaId,
        },
        lease.value,
      );
      if (!published || entry.state !== 'opening') throw new Error('lease lost while opening');
      entry.state = 'serving';
      this.#learnMaxNonce(entry);
      this.#o.log?.info({ escrowId: id.toString(), token: session.fencingToken.toString() }, 'escrow owned');
      try {
        this.#o.opened?.(id, session.state.group.slots);
      } catch {
        // observers never break the claim
      }
      return true;
    } catch (error) {
      if (entry.state === 'opening') {
        if (isSessionError(error) && error.code === SessionErrorCode.HistoryElsewhere) {
          // Never signable from this store: out of routing for good, like a fault; an operator looks.
          this.#o.log?.error(
            { escrowId: id.toString(), err: error },
            'escrow refused: its hosts hold diffs we do not',
          );
          const cause = error.message.slice(0, 500);
          await this.#recordFault(id, `session refused to open (${error.code}): ${cause}`);
          await this.#publisher
            .update(id, escrow.modelId, lease.value, { status: 'faulted', cause })
            .catch(() => false);
        } else {
          this.#o.log?.warn({ escrowId: id.toString(), err: error }, 'claiming the escrow failed');
        }
        await this.#end(entry);
      }
      return false;
    }
  }

  /**
   * True when the escrow's runtime version is refused (versionRefusal): nothing is leased or opened.
   * The cause is logged once per cause; the pool entry is kept saying it (a repeat writes nothing).
   */
  async #declineVersion(escrow: ActiveEscrow): Promise<boolean> {
    const id = escrow.escrowId;
    const cause = await this.#o.versionRefusal?.(escrow.version);
    if (cause === undefined) {
      this.#versionRefused.delete(id);
      return false;
    }
    if (this.#versionRefused.get(id) !== cause) {
      this.#versionRefused.set(id, cause);
      this.#o.log?.error(
        { marker: 'escrow_version_unsupported', escrowId: id.toString(), version: escrow.version, cause },
        'escrow not served: the chain does not approve its devshard protocol version',
      );
    }
    await this.#publisher
      .declined(id, { status: 'unsupported_version', cause: cause.slice(0, 500) })
      .catch(() => false);
    return true;
  }

  /**
   * Architecture §2.6 hand-off: stop new requests, finish in-flight work and saves, release the
   * lease. While requests are in flight it watches for a forced settle's cut order (#watchCut).
   */
  async drain(escrowId: bigint): Promise<void> {
    const e = this.#entries.get(escrowId);
    if (!e) return;
    if (e.ended) return e.ended;
    if (e.state === 'serving') {
      e.state = 'draining';
      await this.#publisher
        .update(escrowId, e.escrow.modelId, e.lease.value, { status: 'draining' })
        .catch(() => false);
    }
    const stopWatching = this.#watchCut(e);
    try {
      await this.#end(e);
    } finally {
      stopWatching();
    }
  }

  /**
   * While the entry has requests in flight, reads the escrow's cut order (keys.escrowCut, written by
   * a forced settle) every CUT_POLL_MS; once there is one, cuts them. Returns the stop switch.
   */
  #watchCut(e: Entry): () => void {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const look = async (): Promise<void> => {
      timer = undefined;
      if (stopped || e.cutCause !== undefined || e.requests.size === 0) return;
      const cause = await escrowCutOrder(this.#o.redis, this.#o.keys, e.escrow.escrowId).catch(() => null);
      if (stopped) return;
      if (cause !== null) {
        this.#cut(e, cause);
        return;
      }
      timer = setTimeout(() => void look(), CUT_POLL_MS);
      timer.unref();
    };
    void look();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /**
   * Cuts every request in flight on the escrow (InferenceCut: the session cancels each host stream at
   * once; composed diffs are still sent, and the controller's finalize reads what the hosts finished).
   */
  #cut(e: Entry, cause: string): void {
    e.cutCause = cause;
    this.#o.log?.warn(
      {
        marker: 'escrow_requests_cut',
        escrowId: e.escrow.escrowId.toString(),
        cause,
        requests: e.requests.size,
      },
      'in-flight requests cut: the escrow is being settled by force',
    );
    const reason = new InferenceCut(cause);
    for (const request of e.requests) request.abort(reason);
  }

  /** Drains every owned session and stops (a clean shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#maintenance);
    await Promise.all([...this.#entries.keys()].map((id) => this.drain(id)));
    await Promise.all([...this.#ending]);
  }

  #routable(e: Entry): boolean {
    return e.state === 'serving' && e.session !== undefined && !e.session.fault && e.lease.lost === undefined;
  }

  /**
   * Takes the entry out (so the escrow can be claimed again at once), then drains and closes the
   * session and releases the lease. Idempotent: every caller gets the same promise.
   */
  #end(e: Entry, afterDrain?: () => Promise<unknown>): Promise<void> {
    if (e.ended) return e.ended;
    // Not routable from here on; `claim` sees the change if the session is still opening.
    e.state = 'draining';
    const id = e.escrow.escrowId;
    const run = (async () => {
      try {
        // close() = drain() + stop: in-flight requests finish, pending saves land (or fail fenced).
        await e.session?.close();
      } catch (error) {
        this.#o.log?.warn({ escrowId: id.toString(), err: error }, 'closing the session failed');
      }
      await afterDrain?.().catch(() => undefined);
      await this.#publisher.released(id, this.#o.replicaId).catch(() => false);
      await e.lease.release();
      e.state = 'gone';
      if (this.#entries.get(id) === e) this.#entries.delete(id);
      if (!this.#entries.has(id)) this.#maxNonceTriedAt.delete(id);
      if (!this.#entries.has(id)) this.#o.released?.(id);
    })();
    e.ended = run;
    this.#ending.add(run);
    void run.finally(() => this.#ending.delete(run));
    return run;
  }

  #leaseLost(escrowId: bigint, reason: LeaseLossReason): void {
    const e = this.#entries.get(escrowId);
    if (!e || reason === 'released') return;
    this.#o.log?.warn({ escrowId: escrowId.toString(), reason }, 'escrow lease lost: out of routing');
    // Out of routing and out of the registry now; the old session stops in the background (its
    // writes are refused by the guard and, past that, by the Postgres token).
    this.#entries.delete(escrowId);
    void this.#end(e);
  }

  #sessionEvent(escrowId: bigint, event: SessionEvent): void {
    try {
      this.#o.onSessionEvent?.(escrowId, event);
    } catch {
      // observers never break the session path
    }
    if (event.type !== 'faulted') return;
    const e = this.#entries.get(escrowId);
    if (!e || e.ended) return;
    this.#faulted(e, event.error);
  }

  #faulted(e: Entry, error: SessionError): void {
    const id = e.escrow.escrowId;
    if (error.code === SessionErrorCode.OwnershipLost) {
      this.#leaseLost(id, 'taken');
      return;
    }
    if (error.code === SessionErrorCode.Draining || error.code === SessionErrorCode.Closed) return;
    // A breaker: no further nonce; out of routing with the cause; an operator looks.
    this.#o.log?.error({ escrowId: id.toString(), code: error.code, err: error }, 'escrow session faulted');
    const cause = error.message.slice(0, 500);
    const leaseValue = e.lease.value;
    // In Postgres before the lease is released: Redis may lose the `faulted` status below (FLUSHALL,
    // failover), and the claim loop reads only active escrows from Postgres.
    const recorded = this.#recordFault(id, `session faulted (${error.code}): ${cause}`);
    void this.#end(e, async () => {
      await recorded;
      await this.#publisher.update(id, e.escrow.modelId, leaseValue, { status: 'faulted', cause });
    });
    // Visible at once, before the drain finishes.
    void this.#publisher
      .update(id, e.escrow.modelId, leaseValue, { status: 'faulted', cause })
      .catch(() => false);
  }

  /** Retried a few times: a fault not in Postgres could be claimed again after a Redis data loss. */
  async #recordFault(escrowId: bigint, lastError: string): Promise<void> {
    const sql = this.#o.sql;
    if (!sql) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await recordEscrowFault(sql, escrowId, lastError);
        return;
      } catch (error) {
        if (attempt >= 5) {
          this.#o.log?.error(
            { escrowId: escrowId.toString(), err: error },
            'recording the session fault in Postgres failed: only the pool state keeps the escrow unclaimed',
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
    }
  }

  /**
   * After a request: at most one pool write per PROGRESS_EVERY_MS per escrow, the last one trailing,
   * so other replicas read a nonce and balance at most that old. Without it every request cost each
   * owner one more Redis script (and every replica one more pool message) — the pool is read on a
   * period anyway (architecture §4), and the owner checks limits on its own session.
   */
  #publishProgressSoon(e: Entry): void {
    if (e.progressTimer) return;
    const publish = () => {
      e.progressTimer = undefined;
      e.progressAt = performance.now();
      void this.#publishProgress(e);
    };
    const wait = e.progressAt + PROGRESS_EVERY_MS - performance.now();
    if (wait <= 0) {
      publish();
      return;
    }
    e.progressTimer = setTimeout(publish, wait);
    e.progressTimer.unref();
  }

  async #publishProgress(e: Entry, onlyIfChanged = false): Promise<void> {
    const s = e.session;
    if (!s || e.state !== 'serving') return;
    const nonce = s.latestNonce;
    const balanceEstimate = s.balance;
    // What returns to the balance as in-flight inferences resolve: the balance check holds an
    // escrow these may bring back above the serving minimum (controller depletion-check.ts).
    const reserved = reservedTotal(s.state);
    const limits = nonceLimits(s);
    const progress = `${nonce}/${balanceEstimate}/${reserved}/${limits.nonceCeiling}`;
    const at = performance.now();
    if (onlyIfChanged && progress === e.publishedProgress && at - e.publishedAt < UNCHANGED_PROGRESS_EVERY_MS)
      return;
    const ok = await this.#publisher
      .update(e.escrow.escrowId, e.escrow.modelId, e.lease.value, {
        nonce,
        balanceEstimate,
        reserved,
        ...limits,
      })
      .catch(() => false);
    // A write that failed is retried by the next maintenance.
    if (ok) {
      e.publishedProgress = progress;
      e.publishedAt = at;
    }
  }

  /**
   * For a session on the default max_nonce: asks the chain (maxNonceOf) at most every
   * MAX_NONCE_RETRY_MS, in the background; on an answer the session adopts it and the pool entry gets
   * the ceiling and its routing stop at once.
   */
  #learnMaxNonce(e: Entry): void {
    const s = e.session;
    const read = this.#o.maxNonceOf;
    const id = e.escrow.escrowId;
    if (!s || !read || s.maxNonceKnown || this.#maxNonceReads.has(id)) return;
    const last = this.#maxNonceTriedAt.get(id) ?? Number.NEGATIVE_INFINITY;
    if (performance.now() - last < MAX_NONCE_RETRY_MS) return;
    this.#maxNonceTriedAt.set(id, performance.now());
    const run = read(id)
      .then(async (maxNonce) => {
        if (!s.adoptMaxNonce(maxNonce)) return;
        this.#o.log?.info(
          { escrowId: id.toString(), maxNonce: maxNonce.toString() },
          'escrow max_nonce learned from the chain',
        );
        if (this.#entries.get(id) === e) await this.#publishProgress(e);
      })
      .catch((error: unknown) =>
        this.#o.log?.warn(
          { escrowId: id.toString(), err: error },
          'reading the escrow max_nonce failed: routing stops at the default until it answers',
        ),
      )
      .finally(() => this.#maxNonceReads.delete(id));
    this.#maxNonceReads.set(id, run);
  }

  #scheduleMaintenance(): void {
    if (this.#closed) return;
    this.#maintenance = setTimeout(() => {
      void this.#maintain().finally(() => this.#scheduleMaintenance());
    }, this.#o.maintenanceEveryMs ?? 2_000);
    this.#maintenance.unref();
  }

  /** checkTimeouts (§7.4), flush of txs waiting with no request to carry them, pool progress. */
  async #maintain(): Promise<void> {
    if (this.#maintaining) return;
    this.#maintaining = true;
    try {
      await Promise.all(
        [...this.#entries.values()].map(async (e) => {
          const s = e.session;
          if (!s || e.state !== 'serving') return;
          try {
            await s.checkTimeouts();
            const idle = performance.now() - e.lastRequestAt >= (this.#o.flushIdleMs ?? 10_000);
            if (idle && s.inFlight === 0 && s.pendingTxCount > 0) await s.flush();
            // Host progress and signatures wait for the next diff's statement; an idle
            // escrow stores them on their own, so they wait at most flushIdleMs.
            else if (idle && s.hasWaitingWrites) await s.saveWaitingWrites();
          } catch (error) {
            this.#o.log?.warn(
              { escrowId: e.escrow.escrowId.toString(), err: error },
              'session maintenance failed',
            );
          }
          this.#learnMaxNonce(e);
          await this.#publishProgress(e, true);
        }),
      );
    } finally {
      this.#maintaining = false;
    }
  }
}

/** The session's nonce ceiling (when known) and routing stop, as the pool entry carries them. */
function nonceLimits(
  session: UserSession | undefined,
): Pick<OwnedEscrowInfo, 'nonceCeiling' | 'routingStop'> {
  if (!session) return { nonceCeiling: undefined, routingStop: undefined };
  const ceiling = session.maxNonceKnown ? session.maxNonce : undefined;
  return { nonceCeiling: ceiling, routingStop: nonceRoutingStop(ceiling, session.state.group.slots.length) };
}

function belowRoutingStop(session: UserSession): boolean {
  return session.latestNonce < nonceLimits(session).routingStop!;
}

/** Routing inputs from the session's billing guards; all zero while opening. */
function hostQuality(
  session: UserSession | undefined,
): Pick<OwnedEscrowInfo, 'dominantHosts' | 'blockedHosts' | 'served'> {
  const served = { match: 0, mismatch: 0, truncated: 0 };
  if (!session) return { dominantHosts: 0, blockedHosts: 0, served };
  for (const c of session.servedCounts().values()) {
    served.match += c.match;
    served.mismatch += c.mismatch;
    served.truncated += c.truncated;
  }
  const risk = session.hostRisk();
  return { dominantHosts: risk.dominant.length, blockedHosts: risk.blocked.length, served };
}

function nextExecutorOf(session: UserSession): string {
  const slots = session.state.group.slots;
  return slots[Number((session.latestNonce + 1n) % BigInt(slots.length))]!;
}
