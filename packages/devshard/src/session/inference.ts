// One inference (devshard-protocol.md §7.1, §7.2; architecture §5): under the compose lock take the
// next nonce with a StartInference for the exact body bytes and queue the diff's write-ahead (the next
// request composes while it is in flight: pipeline.ts); once it is durable, concurrently with other
// requests, send it to the executor (slot nonce mod N) with catch-up diffs, process the
// receipt, hand OpenAI chunks to the caller as they arrive and queue the meta txs. The stream is read
// to its end even if the caller's handlers fail: money depends on the receipt and the Finish. A client
// that goes away (architecture §5) only stops the chunks: before its nonce is taken nothing is spent;
// afterwards the diff is still sent and the host stream read until its meta event (bounded).

import { SessionPhase } from '../hash/root-formula.js';
import type { PayloadWire } from '../json/wire.js';
import { promptHash } from '../prompt/prompt-hash.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { dedupKeys } from '../state/candidates.js';
import { InferenceStatus } from '../state/types.js';
import { HostErrorCode, isHostTransportError } from '../transport/errors.js';
import type { ChatEvent, ChatStream } from '../transport/types.js';
import { resolveUnresolved } from './append.js';
import { checkRejectedDiff, openChat, readMempool } from './delivery.js';
import { burnBlockedNonces } from './dominant-hosts.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkFunding, reservationOf } from './funding.js';
import { composeTip } from './pipeline.js';
import type { Committed } from './replica.js';
import { intakeHostTxs, processReceipt } from './response.js';
import { checkServedBytes, ServedBytes, type ServedVerdict } from './served-bytes.js';
import { type SessionContext, targetAddress } from './session-context.js';
import { queueWritten } from './session-writes.js';
import { composeNext } from './write-ahead.js';

export interface InferenceInput {
  /** The exact request body the executor runs; its canonical-JSON hash is prompt_hash (§2.5). */
  readonly body: Uint8Array;
  readonly model: string;
  /** Input tokens as counted for the reservation. */
  readonly inputLength: bigint;
  /** ≥ 64 (§5.4). */
  readonly maxTokens: bigint;
  /** InferenceRequest.stream (§4.3): ask the host for streamed chunks (default true). */
  readonly stream?: boolean;
  /**
   * Executors (cold addresses) this inference must not be sent to: quarantined hosts and those an
   * earlier attempt of the same client request already tried. Their nonces (slot nonce mod N, §1)
   * are spent fee-only — a diff without StartInference costs fee_per_nonce and no reservation —
   * until the next nonce's executor is another participant.
   */
  readonly avoid?: ReadonlySet<string>;
}

export interface InferenceHandlers {
  /**
   * The diff is persisted and about to be sent to `executor` (slot nonce mod N, §1); `burned` are the
   * nonces spent fee-only before it (InferenceInput.avoid) and their executors.
   */
  onSent?(info: {
    readonly nonce: bigint;
    readonly executor: string;
    readonly burned: readonly { readonly nonce: bigint; readonly executor: string }[];
  }): void;
  /** The receipt event arrived; `confirmed` when it carried the executor's signed receipt. */
  onReceipt?(info: { readonly nonce: bigint; readonly confirmed: boolean }): void;
  /** One OpenAI chunk line exactly as received (`data: {...}`); write it followed by "\n\n". */
  onChunk?(line: Uint8Array): void;
  /** The `data: [DONE]` line exactly as received. */
  onDone?(line: Uint8Array): void;
  /**
   * The client went away (architecture §5). Before the diff is composed: no nonce is taken
   * (`client_aborted`). Afterwards the diff is still sent; no more handlers are called, but the host
   * stream is read until its meta event (at most `disconnectTailMs`) so the Finish is folded in. The
   * client's abort never aborts money work.
   */
  readonly signal?: AbortSignal;
}

export interface InferenceResult {
  readonly nonce: bigint;
  readonly executor: string;
  readonly executorSlot: number;
  /** `completed`: the stream ended normally ([DONE]). `failed`: see `error` (the nonce is spent either way). */
  readonly status: 'completed' | 'failed';
  /** MsgConfirmStart for this inference is queued or applied. */
  readonly confirmed: boolean;
  /** MsgFinishInference for this inference is queued or applied. */
  readonly finished: boolean;
  /** The Finish's response_hash vs the bytes received (served-bytes.ts); absent without a Finish. */
  readonly served?: ServedVerdict;
  readonly error?: Error;
  /** The client went away (handlers.signal) before the stream ended. */
  readonly clientGone?: boolean;
  /** Nonces spent fee-only before this one to skip `input.avoid` executors. */
  readonly burned?: readonly bigint[];
}

export interface PreparedInference extends Committed {
  readonly payload: PayloadWire;
  readonly stream: boolean;
  readonly burned: readonly bigint[];
}

/** An inference's diff, composed and signed; `durable` resolves once it may be sent. */
export interface ComposedInference {
  readonly durable: Promise<PreparedInference>;
}

/**
 * Compose and sign the diff of a new inference on the tip (pipeline.ts) and queue its write-ahead.
 * Caller holds ctx.composeLock, and awaits `durable` after releasing it: the next inference is
 * composed while this one's write is in flight, but nothing of this one is sent before it is stored
 * (architecture §2.3).
 */
export async function composeInference(
  ctx: SessionContext,
  input: InferenceInput,
  workLimit: bigint,
  signal?: AbortSignal,
): Promise<ComposedInference> {
  await ctx.guard.assertUsable();
  if (ctx.draining) throw new SessionError(SessionErrorCode.Draining, 'the session is draining');
  // A client gone while its request waited for the compose lock takes no nonce (§5).
  if (signal?.aborted) throw new SessionError(SessionErrorCode.ClientAborted, 'before a nonce was taken');
  // A write-ahead of unknown outcome keeps its nonce: settle it before numbering this inference.
  if (ctx.replica.unresolved) await resolveUnresolved(ctx);
  if (composeTip(ctx).phase !== SessionPhase.Active || ctx.finalizing) {
    throw new SessionError(SessionErrorCode.NotActive, `phase ${composeTip(ctx).phase}`);
  }
  // Bad input and a request the escrow cannot fund are refused before any nonce is signed, burned
  // ones included (funding.ts, on the tip: the diffs in flight have spent their fees).
  if (input.maxTokens < ctx.replica.state.config.maxTokensFloor) {
    throw new SessionError(SessionErrorCode.MaxTokensBelowFloor, `max_tokens ${input.maxTokens}`);
  }
  const reserve = reservationOf(ctx.replica.state, input.inputLength, input.maxTokens);
  checkFunding(ctx, reserve, 1n);
  // Nonces of a blocked dominant host or of an avoided executor are burned fee-only, never started
  // (dominant-hosts.ts).
  const before = composeTip(ctx).latestNonce;
  try {
    const burned = await burnBlockedNonces(ctx, workLimit, { avoid: input.avoid, reserve });
    return await composeStart(ctx, input, workLimit, reserve, burned);
  } catch (error) {
    // Refused after burning: the burned diffs stand on their own; answer once they are written.
    if (composeTip(ctx).latestNonce > before) await ctx.pipeline.idle();
    throw error;
  }
}

async function composeStart(
  ctx: SessionContext,
  input: InferenceInput,
  workLimit: bigint,
  reserve: bigint,
  burned: readonly bigint[],
): Promise<ComposedInference> {
  const state = composeTip(ctx);
  const nonce = state.latestNonce + 1n;
  if (nonce > workLimit) throw new SessionError(SessionErrorCode.NonceLimit, `nonce ${nonce} > ${workLimit}`);
  // §7.1 step 2: the reservation and this diff's fee must both be covered before composing.
  checkFunding(ctx, reserve, 1n);
  const payload: PayloadWire = {
    prompt: input.body,
    model: input.model,
    inputLength: input.inputLength,
    maxTokens: input.maxTokens,
    startedAt: ctx.clock.nowSeconds(),
  };
  const start = txOf.startInference(
    newMsg.startInference({
      inferenceId: nonce,
      promptHash: promptHash(input.body),
      model: input.model,
      inputLength: input.inputLength,
      maxTokens: input.maxTokens,
      startedAt: payload.startedAt,
      protocolVersion: ctx.record.version, // §12 #10
    }),
  );
  const composed = await composeNext(ctx, [start], { payload, nonce });
  if (!composed) throw new SessionError(SessionErrorCode.ComposeFailed, 'nothing composed');
  const stream = input.stream ?? true;
  const durable = composed.durable.then((committed) => ({ ...committed, payload, stream, burned }));
  durable.catch(() => undefined);
  return { durable };
}

function call(ctx: SessionContext, fn: () => void): void {
  try {
    fn();
  } catch (error) {
    ctx.emit({ type: 'handler_error', error: error as Error });
  }
}

function progress(ctx: SessionContext, nonce: bigint) {
  const status = ctx.replica.state.inferences.get(nonce)?.status;
  const applied = (s: number) => status !== undefined && status >= s && status !== InferenceStatus.TimedOut;
  return {
    confirmed: ctx.pending.has(dedupKeys.confirm(nonce)) || applied(InferenceStatus.Started),
    finished: ctx.pending.has(dedupKeys.finish(nonce)) || applied(InferenceStatus.Finished),
  };
}

/**
 * The abort reason with which a request's owner cuts it (a forced settle: escrow-runtime
 * owned-sessions.ts): like a client that went away, except that the host stream is cancelled at once
 * instead of after `disconnectTailMs`, since the escrow is being finalized now. The money work is the
 * same: a composed diff is still sent, and a Finish the host still produces is read from its mempool
 * (below, or by the finalize gate, finalize-gate.ts).
 */
export class InferenceCut extends Error {
  override name = 'InferenceCut';
  constructor(readonly code: string) {
    super(`request cut by its owner (${code})`);
  }
}

/**
 * Watches the client's signal once the nonce is spent: after it fires, the stream is read on for at most
 * `disconnectTailMs` (none for an InferenceCut), then cancelled.
 */
class ClientWatch {
  gone: boolean;
  /** The tail ran out and we cancelled the stream ourselves (no fault of the host). */
  cut = false;
  #stream: ChatStream | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #onAbort = () => this.#leave();
  /**
   * Aborts the send itself, only when the client left before the host even answered with headers
   * and the tail ran out: the host may or may not have applied the diff; either way the next send
   * to it carries the diff again (catch-up) and the record resolves by the timeout path (§7.4).
   */
  readonly #send = new AbortController();

  constructor(
    private readonly signal: AbortSignal | undefined,
    private readonly tailMs: number,
  ) {
    this.gone = signal?.aborted ?? false;
    if (this.gone) this.#startTail();
    else signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get sendSignal(): AbortSignal {
    return this.#send.signal;
  }

  attach(stream: ChatStream): void {
    this.#stream = stream;
    if (this.gone) this.#startTail();
  }

  #leave(): void {
    this.gone = true;
    this.#startTail();
  }

  #startTail(): void {
    if (this.#timer !== undefined) return;
    const tailMs = this.signal?.reason instanceof InferenceCut ? 0 : this.tailMs;
    this.#timer = setTimeout(() => {
      this.cut = true;
      if (this.#stream) this.#stream.cancel();
      else this.#send.abort();
    }, tailMs);
    this.#timer.unref?.();
  }

  dispose(): void {
    this.signal?.removeEventListener('abort', this.#onAbort);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }
}

/** Sends a committed inference diff and reads its stream to the end. Never throws for host failures. */
export async function runInference(
  ctx: SessionContext,
  committed: PreparedInference,
  handlers: InferenceHandlers,
): Promise<InferenceResult> {
  const nonce = committed.stored.nonce;
  const address = committed.target;
  const base = {
    nonce,
    executor: address,
    executorSlot: Number(nonce % BigInt(ctx.replica.state.group.slots.length)),
  };
  let error: Error | undefined;
  let verifySignature: (() => void) | undefined;
  // The client's signal never reaches the transport: the send and its tail are money work (§5).
  const client = new ClientWatch(handlers.signal, ctx.settings.disconnectTailMs);
  // What arrived between receipt and meta, hashed as response_hash covers it (served-bytes.ts).
  const received = new ServedBytes();
  // The caller's deadlines count from here, a catch-up of a lagging host included (delivery.ts).
  if (handlers.onSent && !client.gone) {
    const burned = committed.burned.map((n) => ({ nonce: n, executor: targetAddress(ctx, n) }));
    call(ctx, () => handlers.onSent?.({ nonce, executor: address, burned }));
  }
  try {
    const stream = await openChat(ctx, address, nonce, {
      payload: committed.payload,
      stream: committed.stream,
      purpose: 'inference',
      signal: client.sendSignal,
    });
    client.attach(stream);
    // True once the rest of the stream is not wanted (the client left and the meta is in).
    const handle = (event: ChatEvent): boolean => {
      if (event.type === 'receipt') {
        const outcome = processReceipt(ctx, address, event.receipt, nonce, { deferSignature: true });
        // Another request's diff may already have applied this inference's Confirm (concurrent
        // sends): confirmed then, even though this receipt queued nothing new.
        const confirmed = outcome.confirmQueued || progress(ctx, nonce).confirmed;
        verifySignature = outcome.verifySignature;
        if (!client.gone) call(ctx, () => handlers.onReceipt?.({ nonce, confirmed }));
      } else if (event.type === 'chunk') {
        // Counted even when the client is gone: the host served them to us all the same.
        received.chunk(event.line);
        // Inline rather than through call(): no closure per chunk on the hottest loop of a request.
        if (!client.gone && handlers.onChunk !== undefined) {
          try {
            handlers.onChunk(event.line);
          } catch (failure) {
            ctx.emit({ type: 'handler_error', error: failure as Error });
          }
        }
      } else if (event.type === 'meta') {
        intakeHostTxs(ctx, address, event.meta.mempool);
        if (client.gone) {
          received.done(); // the meta ends the model frames: all of them were hashed
          return true; // the Finish is in; nobody reads the rest
        }
      } else {
        received.done();
        if (!client.gone) call(ctx, () => handlers.onDone?.(event.line));
      }
      return false;
    };
    // Events as they arrived together, when the transport offers it: an async step per received
    // chunk rather than per event (a 64-token answer often comes in a few reads).
    if (stream.eventBatches) {
      read: for await (const batch of stream.eventBatches()) {
        for (const event of batch) if (handle(event)) break read;
      }
    } else {
      for await (const event of stream) if (handle(event)) break;
    }
  } catch (e) {
    error = e as Error;
    ctx.emit({ type: 'host_error', host: address, operation: 'inference', nonce, error });
    if (isHostTransportError(error) && error.code === HostErrorCode.ApplyFailed) {
      await checkRejectedDiff(ctx, nonce, address);
    }
  } finally {
    client.dispose();
  }
  verifySignature?.();
  let state = progress(ctx, nonce);
  if (state.confirmed && !state.finished && !ctx.guard.fault) {
    // The stream broke after execution started: the Finish may sit in the executor's mempool.
    await readMempool(ctx, address);
    state = progress(ctx, nonce);
  }
  // A stream we cut after the client left proves nothing about the host: no verdict then.
  const served = client.cut
    ? undefined
    : checkServedBytes(ctx, address, nonce, received, error !== undefined);
  // The receipt's Confirm and the meta's Finish are persisted before the caller hears "done": one
  // statement, with the host progress and signature of this answer (session-writes.ts).
  await queueWritten(ctx);
  // A root mismatch seen on this stream is settled (divergence or ownership lost) before we answer.
  await ctx.guard.checked();
  return {
    ...base,
    status: error === undefined ? 'completed' : 'failed',
    ...state,
    ...(served ? { served } : {}),
    ...(error ? { error } : {}),
    ...(client.gone ? { clientGone: true } : {}),
    ...(committed.burned.length > 0 ? { burned: committed.burned } : {}),
  };
}
