// The user side of one escrow's devshard session (devshard-protocol.md §7, §8): the gateway is the
// sole sequencer. Storage, transport, clock and keys are passed in, so the proxy, the controller and
// the devnet run this same code. One instance per owned escrow (architecture §2: one writer, fenced).
//
//   const session = await UserSession.open({ store, escrowId, signer, transport, resolveHost, writeGuard });
//   const result = await session.infer({ body, model, inputLength, maxTokens }, { onChunk, signal });
//   await session.checkTimeouts();            // periodically
//   await session.drain();                    // hand-off: in-flight work and its writes done
//   const { json } = await session.finalize(); // on the controller, after it opened the session
import type { PrivateKey } from '@gonka-gateway/chain';
import type { SessionPhase } from '../hash/root-formula.js';
import type { FinalizeResult } from '../settlement/document.js';
import { defaultRecover, memoizeRecover, type RecoverFn } from '../signing/primitive.js';
import type { WarmKeyLookup } from '../state/apply-context.js';
import { canonicalEscrowId } from '../state/init.js';
import type { SessionState } from '../state/types.js';
import type { HostTarget, HostTransport } from '../transport/types.js';
import { catchUp, recoverFromMempools } from './delivery.js';
import { type HostRisk, hostRisk, noteNonService } from './dominant-hosts.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { type FinalizeOptions, finalizeSession } from './finalize.js';
import { type FlushResult, flushDiff } from './flush.js';
import { refuseHistoryElsewhere } from './history-probe.js';
import { HostProgress } from './host-progress.js';
import {
  composeInference,
  type InferenceHandlers,
  type InferenceInput,
  type InferenceResult,
  runInference,
} from './inference.js';
import { type InferenceCost, inferenceCostOf } from './inference-cost.js';
import { KeyedLock, KeyedSemaphore, SerialLock } from './locks.js';
import { SessionGuard } from './ownership.js';
import { WritePipeline } from './pipeline.js';
import { replayStored } from './replay.js';
import { Replica } from './replica.js';
import { type ServedCounts, servedCounts } from './served-bytes.js';
import { type Clock, systemClock } from './session-clock.js';
import { type SessionContext, type SessionEvent, type SessionSettings, tracked } from './session-context.js';
import { saveWrites } from './session-writes.js';
import { SettlementProgress } from './settlement-progress.js';
import { SnapshotProgress } from './snapshot-progress.js';
import { DEFAULT_SNAPSHOT_EVERY } from './snapshots.js';
import {
  isSessionStoreError,
  type SessionStore,
  SessionStoreErrorCode,
  type StoredSession,
} from './store.js';
import { TimeoutRounds } from './timeout-rounds.js';
import { checkTimeouts, type TimeoutOutcome } from './timeouts.js';
import { WriteBuffer } from './write-buffer.js';

export interface UserSessionOptions {
  readonly store: SessionStore;
  readonly escrowId: string | bigint;
  /** The escrow creator's key: signs every diff and request (§2.4). */
  readonly signer: PrivateKey;
  readonly transport: HostTransport;
  /**
   * The host behind a cold address for this session's runtime version (e.g. from the participant's
   * inference_url with devshardBaseUrl); undefined = unknown, treated as down.
   */
  readonly resolveHost: (address: string, version: string) => HostTarget | undefined;
  /**
   * Called right before every fenced store write (append, pending txs, payload prune, snapshot,
   * finalize document); throws when this process may no longer write (its lease is about to expire).
   * The session then faults with `ownership_lost`. The fencing token itself is minted by the store at
   * open (architecture §2.1).
   */
  readonly writeGuard?: () => void;
  readonly clock?: Clock;
  /**
   * The escrow's max_nonce (§7.5; chain default 20 000, mainnet 1 000 000) for a record stored without
   * one (`chainParams.maxNonce`, which wins). Default 20 000 until a chain read tells (adoptMaxNonce).
   */
  readonly maxNonce?: bigint;
  /** Warm-key grants (§5.7), consulted for slots with no binding yet. Absent = none. */
  readonly isWarmKey?: WarmKeyLookup;
  /** Signature recovery backend; memoized per session. */
  readonly recover?: RecoverFn;
  readonly onEvent?: (event: SessionEvent) => void;
  /** New inferences stop this many nonces before max_nonce (default 200, never below N + 1). */
  readonly nonceReserve?: bigint;
  /** Catch-up chunk size (default and maximum 200, §7.3). */
  readonly catchUpChunk?: number;
  /** Clock-skew margin after a deadline (default 5 s, §7.4). */
  readonly timeoutSkewSeconds?: bigint;
  /** Wait before another vote round for the same inference (default 30 s). */
  readonly timeoutRetrySeconds?: bigint;
  /** Concurrent verify-timeout calls per host (default 32, §7.4). */
  readonly verifyConcurrencyPerHost?: number;
  /** §12 #1 (default `calibrate`). */
  readonly postStateRoot?: SessionSettings['postStateRoot'];
  /** Tries of a write-ahead whose outcome is unknown, the identical diff each time (default 4). */
  readonly appendAttempts?: number;
  /** Wait before the first such retry, doubled after each (default 200 ms, on `clock`). */
  readonly appendRetryMs?: number;
  /** How long a host stream is still read for its meta after the client went away (default 30 s, §5). */
  readonly disconnectTailMs?: number;
  /** Save a root-verified snapshot every this many diffs (default 500; 0 = never; snapshots.ts). */
  readonly snapshotEvery?: number;
  /** Diffs kept in memory for catch-up; older ones are read from the store (default 1 000). */
  readonly diffWindow?: number;
}

const DEFAULT_MAX_NONCE = 20_000n;
const DEFAULT_NONCE_RESERVE = 200n;
const MAX_CATCH_UP_CHUNK = 200;
/**
 * Signature recoveries remembered per session. A signature comes back within a few diffs: a host tx
 * recovered at intake (response.ts) is recovered again when the next diff applies it (and again if
 * it is dropped and re-offered until its Confirm lands); measured with sequential inferences, every
 * hit was the entry inserted just before. 1 024 covers hundreds of nonces of that; a bigger memo only
 * held the ~2 recoveries of every nonce, ~0.4 KB each, and made the session heap grow with its nonce
 * until full (8 192 entries: ~3 MB). A miss costs one recovery, never a different answer.
 */
const RECOVER_MEMO_ENTRIES = 1_024;

export class UserSession {
  readonly #ctx: SessionContext;
  #drained: Promise<void> | undefined;
  #maxNonceKnown = false;

  private constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  /**
   * Takes the session (architecture §2.5): `store.acquire` mints this owner's fencing token and loads
   * the session in the same transaction, so every older writer is fenced before we read and nothing it
   * writes afterwards can reach our view. Then replays the stored diffs and, in the background (awaited
   * by drain), reads the mempools of the executors of every live inference.
   */
  static async open(options: UserSessionOptions): Promise<UserSession> {
    const escrowId = canonicalEscrowId(options.escrowId);
    const { store } = options;
    let stored: StoredSession;
    try {
      stored = await store.acquire(escrowId);
    } catch (error) {
      if (isSessionStoreError(error) && error.code === SessionStoreErrorCode.NotFound) {
        throw new SessionError(SessionErrorCode.NotFound, `escrow ${escrowId}`, error);
      }
      throw error;
    }
    if (options.signer.address !== stored.record.escrow.creator) {
      // Hosts answer 403 to anyone but the creator (§10 item 8).
      throw new SessionError(SessionErrorCode.WrongSigner, `signer is not the creator of escrow ${escrowId}`);
    }
    const recover = memoizeRecover(options.recover ?? defaultRecover, RECOVER_MEMO_ENTRIES);
    const applyCtx = { recover, ...(options.isWarmKey ? { isWarmKey: options.isWarmKey } : {}) };
    const replayed = await replayStored(store, stored, recover, applyCtx, {
      emit: (event) => options.onEvent?.(event),
      ...(options.diffWindow !== undefined ? { diffWindow: options.diffWindow } : {}),
    });
    const chunk = Math.min(options.catchUpChunk ?? MAX_CATCH_UP_CHUNK, MAX_CATCH_UP_CHUNK);
    if (!Number.isInteger(chunk) || chunk < 1)
      throw new RangeError('catchUpChunk must be a positive integer');
    const version = stored.record.version;
    const emit = options.onEvent ?? (() => undefined);
    const safeEmit = (event: SessionEvent) => {
      try {
        emit(event);
      } catch {
        // A failing listener must not break the protocol path.
      }
    };
    const maxNonce = stored.record.chainParams.maxNonce || options.maxNonce || undefined;

    const background = new Set<Promise<void>>();
    const writes = new WriteBuffer();
    const ctx: SessionContext = {
      record: stored.record,
      escrowId,
      signer: options.signer,
      store,
      transport: options.transport,
      clock: options.clock ?? systemClock,
      applyCtx,
      resolveHost: (address) => options.resolveHost(address, version),
      settings: {
        maxNonce: maxNonce ?? DEFAULT_MAX_NONCE,
        nonceReserve: options.nonceReserve ?? DEFAULT_NONCE_RESERVE,
        catchUpChunk: BigInt(chunk),
        timeoutSkewSeconds: options.timeoutSkewSeconds ?? 5n,
        timeoutRetrySeconds: options.timeoutRetrySeconds ?? 30n,
        postStateRoot: options.postStateRoot ?? 'calibrate',
        appendAttempts: Math.max(1, options.appendAttempts ?? 4),
        appendRetryMs: options.appendRetryMs ?? 200,
        disconnectTailMs: options.disconnectTailMs ?? 30_000,
        snapshotEvery: options.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY,
      },
      emit: safeEmit,
      guard: new SessionGuard({
        escrowId,
        store,
        fencingToken: stored.fencingToken,
        writeGuard: options.writeGuard,
        onFault: (error) => safeEmit({ type: 'faulted', error }),
        background,
      }),
      replica: new Replica(replayed.state, replayed.log, replayed.stamps),
      pending: replayed.pending,
      hosts: new HostProgress(replayed.hostSync, writes),
      composeLock: new SerialLock(),
      pipeline: new WritePipeline(),
      catchUpLock: new KeyedLock(),
      verifyLimit: new KeyedSemaphore(options.verifyConcurrencyPerHost ?? 32),
      writes,
      background,
      work: new Set(),
      snapshots: new SnapshotProgress(replayed.log.baseNonce),
      settlement: new SettlementProgress(stored.finalizeDocument),
      draining: false,
      inFlight: 0,
      finalizing: false,
      timeoutRounds: new TimeoutRounds(),
    };
    // Stored pending txs the replay dropped (applied already, or moot) leave the store too.
    const kept = new Set(replayed.pending.keys());
    ctx.writes.delete(stored.pendingTxs.map((p) => p.key).filter((k) => !kept.has(k)));
    if (stored.lastNonce === 0n && !stored.snapshot) await refuseHistoryElsewhere(ctx);
    const session = new UserSession(ctx);
    session.#maxNonceKnown = maxNonce !== undefined;
    void session.recoverFromMempools();
    return session;
  }

  /** The token the store minted for this owner at open (architecture §2.1). */
  get fencingToken(): bigint {
    return this.#ctx.guard.fencingToken;
  }

  get escrowId(): string {
    return this.#ctx.escrowId;
  }

  get version(): string {
    return this.#ctx.record.version;
  }

  /** The replica after the latest persisted diff (immutable value). */
  get state(): SessionState {
    return this.#ctx.replica.state;
  }

  get latestNonce(): bigint {
    return this.#ctx.replica.state.latestNonce;
  }

  get phase(): SessionPhase {
    return this.#ctx.replica.state.phase;
  }

  get balance(): bigint {
    return this.#ctx.replica.state.balance;
  }

  /** Cost of inference `nonce` in ngonka and whether its Finish is applied (inference-cost.ts). */
  inferenceCost(nonce: bigint): InferenceCost | undefined {
    return inferenceCostOf(this.#ctx.replica.state, nonce);
  }

  get pendingTxCount(): number {
    return this.#ctx.pending.size;
  }

  get inFlight(): number {
    return this.#ctx.inFlight;
  }

  /** Why the session stopped (divergence, rejected diff, ownership lost, corrupt store, closed), if it did. */
  get fault(): SessionError | undefined {
    return this.#ctx.guard.fault;
  }

  /** The max_nonce this session stops new work below (§7.5); 20 000 while not known (maxNonceKnown). */
  get maxNonce(): bigint {
    return this.#ctx.settings.maxNonce;
  }

  /** Whether maxNonce is the escrow's (its record, the opener or adoptMaxNonce), not the default. */
  get maxNonceKnown(): boolean {
    return this.#maxNonceKnown;
  }

  /**
   * Takes the escrow's max_nonce learned after open (the opener's chain read failed then, and
   * succeeded later); the next compose already uses it. Only a session still on the default adopts:
   * a known ceiling is the escrow's for its life (§7.5, frozen on newer rows). Returns whether it did.
   */
  adoptMaxNonce(maxNonce: bigint): boolean {
    if (this.#maxNonceKnown || maxNonce <= 0n) return false;
    this.#ctx.settings.maxNonce = maxNonce;
    this.#maxNonceKnown = true;
    return true;
  }

  /** Last nonce a new inference may take: max_nonce − max(reserve, N + 1) (§7.5). */
  get workLimit(): bigint {
    const n = BigInt(this.#ctx.replica.state.group.slots.length + 1);
    const reserve = this.#ctx.settings.nonceReserve > n ? this.#ctx.settings.nonceReserve : n;
    return this.#ctx.settings.maxNonce - reserve;
  }

  /** Whether infer() can take a nonce now (balance aside). */
  get canStartInference(): boolean {
    const c = this.#ctx;
    return (
      c.guard.usable &&
      !c.draining &&
      !c.finalizing &&
      c.replica.state.phase === 0 &&
      c.replica.state.latestNonce + 1n <= this.workLimit
    );
  }

  /** Dominant hosts of the group and the ones blocked after a refusal (dominant-hosts.ts); for routing. */
  hostRisk(): HostRisk {
    return hostRisk(this.#ctx);
  }

  /** Served-bytes verdicts (match / mismatch / truncated) by executor address (served-bytes.ts). */
  servedCounts(): ReadonlyMap<string, Readonly<ServedCounts>> {
    return servedCounts(this.#ctx);
  }

  /** Highest nonce `address` is known to hold (§7.1 host_sync_nonce). */
  hostSyncNonce(address: string): bigint {
    return this.#ctx.hosts.of(address);
  }

  /**
   * Runs one inference: persists its diff (write-ahead), sends it to host nonce mod N with catch-up
   * diffs and streams the result. Throws SessionError before anything is persisted (balance, nonce
   * limit, store failure, client gone, draining…); afterwards host failures are reported in the
   * result, never thrown.
   */
  infer(input: InferenceInput, handlers: InferenceHandlers = {}): Promise<InferenceResult> {
    const ctx = this.#ctx;
    if (ctx.draining) return Promise.reject(this.#drainingError());
    return tracked(ctx, async () => {
      ctx.inFlight++;
      try {
        // The lock covers composing and signing only; the diff is sent once it is durable, its
        // write-ahead possibly shared with the diffs composed meanwhile (pipeline.ts).
        const composed = await ctx.composeLock.run(() =>
          composeInference(ctx, input, this.workLimit, handlers.signal),
        );
        const committed = await composed.durable;
        const result = await runInference(ctx, committed, handlers);
        if (!result.confirmed) noteNonService(ctx, result.executor, result.nonce); // dominant-hosts.ts
        return result;
      } finally {
        ctx.inFlight--;
      }
    });
  }

  /** Sends the pending txs in a diff of their own; undefined when there is nothing to send. */
  flush(): Promise<FlushResult | undefined> {
    if (this.#ctx.draining) return Promise.reject(this.#drainingError());
    return tracked(this.#ctx, () => flushDiff(this.#ctx, []));
  }

  /** One pass of §7.4 timeouts; call periodically (e.g. every few seconds). Nothing while draining. */
  checkTimeouts(): Promise<TimeoutOutcome[]> {
    return tracked(this.#ctx, () => checkTimeouts(this.#ctx));
  }

  /**
   * Takeover (architecture §2.5): asks the executor of every inference still Pending or Started for its
   * mempool and queues the Confirm/Finish found, so what the previous owner had received but not yet
   * put in a diff is billed at its real cost. Run by open in the background; returns how many txs it
   * queued.
   */
  recoverFromMempools(): Promise<number> {
    return tracked(this.#ctx, () => recoverFromMempools(this.#ctx));
  }

  /** Sends `address` every diff it lacks, in chunks (§7.3); true when it holds `upTo` (default: latest). */
  async catchUpHost(address: string, upTo?: bigint): Promise<boolean> {
    return (await catchUp(this.#ctx, address, upTo ?? this.#ctx.replica.state.latestNonce)).ok;
  }

  /** Finalize rounds, signature quorum and the finalize document (§8); idempotent. */
  finalize(options: FinalizeOptions = {}): Promise<FinalizeResult> {
    if (this.#ctx.draining) return Promise.reject(this.#drainingError());
    return tracked(this.#ctx, () => finalizeSession(this.#ctx, options));
  }

  /**
   * Stores the writes waiting for the next diff (host progress, signatures, pending-tx changes:
   * session-writes.ts) in one statement of their own. For an owner whose escrow went idle, so they
   * wait at most its idle-flush time (GATEWAY_FLUSH_IDLE_MS) when no diff comes to carry them.
   */
  saveWaitingWrites(): Promise<void> {
    return tracked(this.#ctx, () => saveWrites(this.#ctx));
  }

  /** Whether writes wait for a statement to carry them (see saveWaitingWrites). */
  get hasWaitingWrites(): boolean {
    return !this.#ctx.writes.empty;
  }

  /**
   * Hand-off (architecture §2.6): refuses new work (`draining`), then waits for every request in
   * flight with its receipt/meta tail, the mempool reads of open and every store write they started,
   * and stores whatever still waited for a statement (session-writes.ts). Idempotent. The session
   * stays readable; the caller then releases its lease.
   */
  drain(): Promise<void> {
    const ctx = this.#ctx;
    ctx.draining = true;
    this.#drained ??= (async () => {
      // A store that keeps failing leaves the writes waiting: a few tries, then they are lost like
      // a crash's (all of them re-learned, session-writes.ts).
      let tries = 0;
      for (;;) {
        if (ctx.work.size > 0) await Promise.all(ctx.work);
        else if (ctx.background.size > 0) await Promise.all(ctx.background);
        else if (ctx.guard.checking) await ctx.guard.checked();
        else if (ctx.writes.writing) await ctx.writes.settled();
        else if (!ctx.writes.empty && tries++ < 3) await saveWrites(ctx);
        else return;
      }
    })();
    return this.#drained;
  }

  /** drain(), then the session stops for good (`closed`). */
  async close(): Promise<void> {
    await this.drain();
    this.#ctx.guard.close();
  }

  #drainingError(): SessionError {
    return this.#ctx.guard.fault ?? new SessionError(SessionErrorCode.Draining, 'the session is draining');
  }
}
