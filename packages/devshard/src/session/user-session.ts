// The user side of one escrow's devshard session (devshard-protocol.md §7, §8): the gateway is the
// sole sequencer. Storage, transport, clock and keys are passed in, so the proxy, the controller and
// the devnet run this same code. One instance per owned escrow (architecture §2: one writer, fenced).
//
//   const session = await UserSession.open({ store, escrowId, signer, transport, resolveHost, fencingToken });
//   const result = await session.infer({ body, model, inputLength, maxTokens }, { onChunk });
//   await session.checkTimeouts();            // periodically
//   const { json } = await session.finalize(); // when draining
import type { PrivateKey } from '@gonka-gateway/chain';
import type { FinalizeResult } from '../finalize/document.js';
import { type FinalizeOptions, finalizeSession } from '../finalize/finalize.js';
import type { SessionPhase } from '../hash/state-root.js';
import { defaultRecover, memoizeRecover, type RecoverFn } from '../signing/primitive.js';
import type { WarmKeyLookup } from '../state/context.js';
import { canonicalEscrowId } from '../state/init.js';
import type { SessionState } from '../state/types.js';
import type { HostTarget, HostTransport } from '../transport/types.js';
import { type Clock, systemClock } from './clock.js';
import { hostSyncOf, type SessionContext, type SessionEvent, type SessionSettings } from './context.js';
import { catchUp } from './delivery.js';
import { type HostRisk, hostRisk, noteNonService } from './dominant-hosts.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { type FlushResult, flushDiff } from './flush.js';
import {
  composeInference,
  type InferenceHandlers,
  type InferenceInput,
  type InferenceResult,
  runInference,
} from './inference.js';
import { Coalescer, KeyedLock, KeyedSemaphore, SerialLock } from './locks.js';
import { replaySession } from './replay.js';
import { type ServedCounts, servedCounts } from './served-bytes.js';
import { isSessionStoreError, type SessionStore, SessionStoreErrorCode } from './store.js';
import { checkTimeouts, type TimeoutOutcome } from './timeouts.js';

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
  /** This owner's fencing token (architecture §2.1); older writers are fenced at open. */
  readonly fencingToken: bigint;
  readonly clock?: Clock;
  /** Chain param max_nonce (§7.5; chain default 20 000, mainnet 1 000 000). Default 20 000. */
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
}

const DEFAULT_MAX_NONCE = 20_000n;
const DEFAULT_NONCE_RESERVE = 200n;
const MAX_CATCH_UP_CHUNK = 200;

export class UserSession {
  readonly #ctx: SessionContext;
  readonly #saver: Coalescer;

  private constructor(ctx: SessionContext, saver: Coalescer) {
    this.#ctx = ctx;
    this.#saver = saver;
  }

  /** Loads the session from the store, fences older writers and replays every stored diff. */
  static async open(options: UserSessionOptions): Promise<UserSession> {
    const escrowId = canonicalEscrowId(options.escrowId);
    const { store } = options;
    const stored = await store.load(escrowId);
    if (!stored) throw new SessionError(SessionErrorCode.NotFound, `escrow ${escrowId}`);
    if (options.signer.address !== stored.record.escrow.creator) {
      // Hosts answer 403 to anyone but the creator (§10 item 8).
      throw new SessionError(SessionErrorCode.WrongSigner, `signer is not the creator of escrow ${escrowId}`);
    }
    try {
      await store.acquire(escrowId, options.fencingToken);
    } catch (error) {
      if (isSessionStoreError(error) && error.code === SessionStoreErrorCode.StaleToken) {
        throw new SessionError(SessionErrorCode.StaleWriter, error.message, error);
      }
      throw error;
    }
    const recover = memoizeRecover(options.recover ?? defaultRecover, 8_192);
    const applyCtx = { recover, ...(options.isWarmKey ? { isWarmKey: options.isWarmKey } : {}) };
    const replayed = replaySession(stored, recover, applyCtx);
    const chunk = Math.min(options.catchUpChunk ?? MAX_CATCH_UP_CHUNK, MAX_CATCH_UP_CHUNK);
    if (!Number.isInteger(chunk) || chunk < 1)
      throw new RangeError('catchUpChunk must be a positive integer');
    const version = stored.record.version;
    const emit = options.onEvent ?? (() => undefined);

    let ctx!: SessionContext;
    const saver = new Coalescer(async () => {
      try {
        await store.savePendingTxs(escrowId, ctx.pending.toStored(), ctx.fencingToken);
      } catch (error) {
        if (isSessionStoreError(error) && error.code === SessionStoreErrorCode.StaleToken && !ctx.fault) {
          ctx.fault = new SessionError(SessionErrorCode.StaleWriter, error.message, error);
        }
        emit({ type: 'store_error', operation: 'savePendingTxs', error: error as Error });
      }
    });
    ctx = {
      record: stored.record,
      escrowId,
      signer: options.signer,
      store,
      transport: options.transport,
      clock: options.clock ?? systemClock,
      fencingToken: options.fencingToken,
      applyCtx,
      resolveHost: (address) => options.resolveHost(address, version),
      settings: {
        maxNonce: options.maxNonce ?? DEFAULT_MAX_NONCE,
        nonceReserve: options.nonceReserve ?? DEFAULT_NONCE_RESERVE,
        catchUpChunk: BigInt(chunk),
        timeoutSkewSeconds: options.timeoutSkewSeconds ?? 5n,
        timeoutRetrySeconds: options.timeoutRetrySeconds ?? 30n,
        postStateRoot: options.postStateRoot ?? 'calibrate',
      },
      emit: (event) => {
        try {
          emit(event);
        } catch {
          // A failing listener must not break the protocol path.
        }
      },
      state: replayed.state,
      log: replayed.log,
      pending: replayed.pending,
      hostSync: replayed.hostSync,
      stamps: replayed.stamps,
      composeLock: new SerialLock(),
      catchUpLock: new KeyedLock(),
      verifyLimit: new KeyedSemaphore(options.verifyConcurrencyPerHost ?? 32),
      savePending: () => saver.schedule(),
      pendingSaved: () => saver.settled(),
      background: new Set(),
      settlementSigs: new Map(),
      finalizeDocument: stored.finalizeDocument,
      finalizeRun: undefined,
      fault: undefined,
      inFlight: 0,
      finalizing: false,
      checkingTimeouts: false,
      timeoutRetryAt: new Map(),
    };
    return new UserSession(ctx, saver);
  }

  get escrowId(): string {
    return this.#ctx.escrowId;
  }

  get version(): string {
    return this.#ctx.record.version;
  }

  /** The replica after the latest persisted diff (immutable value). */
  get state(): SessionState {
    return this.#ctx.state;
  }

  get latestNonce(): bigint {
    return this.#ctx.state.latestNonce;
  }

  get phase(): SessionPhase {
    return this.#ctx.state.phase;
  }

  get balance(): bigint {
    return this.#ctx.state.balance;
  }

  get pendingTxCount(): number {
    return this.#ctx.pending.size;
  }

  get inFlight(): number {
    return this.#ctx.inFlight;
  }

  /** Why the session stopped (divergence, lost write-ahead, stale writer, closed), if it did. */
  get fault(): SessionError | undefined {
    return this.#ctx.fault;
  }

  /** Last nonce a new inference may take: max_nonce − max(reserve, N + 1) (§7.5). */
  get workLimit(): bigint {
    const n = BigInt(this.#ctx.state.group.slots.length + 1);
    const reserve = this.#ctx.settings.nonceReserve > n ? this.#ctx.settings.nonceReserve : n;
    return this.#ctx.settings.maxNonce - reserve;
  }

  /** Whether infer() can take a nonce now (balance aside). */
  get canStartInference(): boolean {
    const c = this.#ctx;
    return !c.fault && !c.finalizing && c.state.phase === 0 && c.state.latestNonce + 1n <= this.workLimit;
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
    return hostSyncOf(this.#ctx, address);
  }

  /**
   * Runs one inference: persists its diff (write-ahead), sends it to host nonce mod N with catch-up
   * diffs and streams the result. Throws SessionError before anything is persisted (balance, nonce
   * limit, store failure…); afterwards host failures are reported in the result, never thrown.
   */
  async infer(input: InferenceInput, handlers: InferenceHandlers = {}): Promise<InferenceResult> {
    const ctx = this.#ctx;
    ctx.inFlight++;
    try {
      const committed = await ctx.composeLock.run(() => composeInference(ctx, input, this.workLimit));
      const result = await runInference(ctx, committed, handlers);
      if (!result.confirmed) noteNonService(ctx, result.executor, result.nonce); // dominant-hosts.ts
      return result;
    } finally {
      ctx.inFlight--;
    }
  }

  /** Sends the pending txs in a diff of their own; undefined when there is nothing to send. */
  flush(): Promise<FlushResult | undefined> {
    return flushDiff(this.#ctx, []);
  }

  /** One pass of §7.4 timeouts; call periodically (e.g. every few seconds). */
  checkTimeouts(): Promise<TimeoutOutcome[]> {
    return checkTimeouts(this.#ctx);
  }

  /** Sends `address` every diff it lacks, in chunks (§7.3); true when it holds `upTo` (default: latest). */
  async catchUpHost(address: string, upTo?: bigint): Promise<boolean> {
    return (await catchUp(this.#ctx, address, upTo ?? this.#ctx.state.latestNonce)).ok;
  }

  /** Finalize rounds, signature quorum and the finalize document (§8); idempotent. */
  finalize(options: FinalizeOptions = {}): Promise<FinalizeResult> {
    return finalizeSession(this.#ctx, options);
  }

  /** Stops new work and waits for queued store writes. */
  async close(): Promise<void> {
    if (!this.#ctx.fault) this.#ctx.fault = new SessionError(SessionErrorCode.Closed);
    await this.#saver.settled();
    await Promise.all(this.#ctx.background);
  }
}
