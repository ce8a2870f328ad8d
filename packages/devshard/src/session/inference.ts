// One inference (devshard-protocol.md §7.1, §7.2; architecture §5): under the compose lock take the
// next nonce with a StartInference for the exact body bytes and persist the diff; then, concurrently
// with other requests, send it to the executor (slot nonce mod N) with catch-up diffs, process the
// receipt, hand OpenAI chunks to the caller as they arrive and queue the meta txs. The stream is read
// to its end even if the caller's handlers fail: money depends on the receipt and the Finish.
import { SessionPhase } from '../hash/state-root.js';
import type { PayloadWire } from '../json/wire.js';
import { promptHash } from '../prompt/prompt-hash.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { InferenceStatus } from '../state/types.js';
import type { SessionContext } from './context.js';
import { openChat } from './delivery.js';
import { burnBlockedNonces } from './dominant-hosts.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { intakeHostTxs, processReceipt } from './response.js';
import { checkServedBytes, ServedBytes, type ServedVerdict } from './served-bytes.js';
import { assertUsable, type Committed, composeAndPersist } from './write-ahead.js';

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
}

export interface InferenceHandlers {
  /** The receipt event arrived; `confirmed` when it carried the executor's signed receipt. */
  onReceipt?(info: { readonly nonce: bigint; readonly confirmed: boolean }): void;
  /** One OpenAI chunk line exactly as received (`data: {...}`); write it followed by "\n\n". */
  onChunk?(line: Uint8Array): void;
  /** The `data: [DONE]` line exactly as received. */
  onDone?(line: Uint8Array): void;
  /** Aborts the host stream (the diff is spent; the Finish may then arrive later via mempools). */
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
}

export interface PreparedInference extends Committed {
  readonly payload: PayloadWire;
  readonly stream: boolean;
}

/** Compose, sign and persist the diff of a new inference. Caller holds ctx.composeLock. */
export async function composeInference(
  ctx: SessionContext,
  input: InferenceInput,
  workLimit: bigint,
): Promise<PreparedInference> {
  assertUsable(ctx);
  // Nonces of a blocked dominant host are burned fee-only, never started (dominant-hosts.ts).
  if (ctx.state.phase === SessionPhase.Active && !ctx.finalizing) await burnBlockedNonces(ctx, workLimit);
  const state = ctx.state;
  if (state.phase !== SessionPhase.Active || ctx.finalizing) {
    throw new SessionError(SessionErrorCode.NotActive, `phase ${state.phase}`);
  }
  const nonce = state.latestNonce + 1n;
  if (nonce > workLimit) throw new SessionError(SessionErrorCode.NonceLimit, `nonce ${nonce} > ${workLimit}`);
  if (input.maxTokens < state.config.maxTokensFloor) {
    throw new SessionError(SessionErrorCode.MaxTokensBelowFloor, `max_tokens ${input.maxTokens}`);
  }
  // §7.1 step 2: the reservation and this diff's fee must both be covered before composing.
  const reserved = (input.inputLength + input.maxTokens) * state.config.tokenPrice;
  if (state.balance < reserved + state.config.feePerNonce) {
    throw new SessionError(
      SessionErrorCode.InsufficientBalance,
      `balance ${state.balance} < reserve ${reserved} + fee ${state.config.feePerNonce}`,
    );
  }
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
  const committed = await composeAndPersist(ctx, [start], { payload });
  if (!committed) throw new SessionError(SessionErrorCode.ComposeFailed, 'nothing composed');
  return { ...committed, payload, stream: input.stream ?? true };
}

function call(ctx: SessionContext, fn: () => void): void {
  try {
    fn();
  } catch (error) {
    ctx.emit({ type: 'handler_error', error: error as Error });
  }
}

function progress(ctx: SessionContext, nonce: bigint) {
  const status = ctx.state.inferences.get(nonce)?.status;
  const applied = (s: number) => status !== undefined && status >= s && status !== InferenceStatus.TimedOut;
  return {
    confirmed: ctx.pending.has(`confirm:${nonce}`) || applied(InferenceStatus.Started),
    finished: ctx.pending.has(`finish:${nonce}`) || applied(InferenceStatus.Finished),
  };
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
    executorSlot: Number(nonce % BigInt(ctx.state.group.slots.length)),
  };
  let error: Error | undefined;
  let verifySignature: (() => void) | undefined;
  const received = new ServedBytes();
  try {
    const stream = await openChat(ctx, address, nonce, {
      payload: committed.payload,
      stream: committed.stream,
      purpose: 'inference',
      ...(handlers.signal ? { signal: handlers.signal } : {}),
    });
    for await (const event of stream) {
      if (event.type === 'receipt') {
        const outcome = processReceipt(ctx, address, event.receipt, nonce, { deferSignature: true });
        // Another request's diff may already have applied this inference's Confirm (concurrent
        // sends): confirmed then, even though this receipt queued nothing new.
        const confirmed = outcome.confirmQueued || progress(ctx, nonce).confirmed;
        verifySignature = outcome.verifySignature;
        call(ctx, () => handlers.onReceipt?.({ nonce, confirmed }));
      } else if (event.type === 'chunk') {
        received.chunk(event.line);
        call(ctx, () => handlers.onChunk?.(event.line));
      } else if (event.type === 'meta') {
        intakeHostTxs(ctx, address, event.meta.mempool);
      } else {
        received.done();
        call(ctx, () => handlers.onDone?.(event.line));
      }
    }
  } catch (e) {
    error = e as Error;
    ctx.emit({ type: 'host_error', host: address, operation: 'inference', nonce, error });
  }
  verifySignature?.();
  let state = progress(ctx, nonce);
  if (state.confirmed && !state.finished && !ctx.fault) {
    // The stream broke after execution started: the Finish may sit in the executor's mempool.
    await recoverFromMempool(ctx, address);
    state = progress(ctx, nonce);
  }
  const served = checkServedBytes(ctx, address, nonce, received, error !== undefined);
  // The receipt's Confirm and the meta's Finish are persisted before the caller hears "done".
  await ctx.pendingSaved();
  return {
    ...base,
    status: error === undefined ? 'completed' : 'failed',
    ...state,
    ...(served ? { served } : {}),
    ...(error ? { error } : {}),
  };
}

async function recoverFromMempool(ctx: SessionContext, address: string): Promise<void> {
  const target = ctx.resolveHost(address);
  if (!target) return;
  try {
    const txs = await ctx.transport.getMempool(target, ctx.escrowId);
    intakeHostTxs(
      ctx,
      address,
      txs.map((t) => t.bytes),
    );
  } catch (error) {
    ctx.emit({ type: 'host_error', host: address, operation: 'mempool', error: error as Error });
  }
}
