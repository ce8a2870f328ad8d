// The executor side of an inference (devshard-protocol.md §2.4 executor receipt and Finish, §2.5,
// §4.4): check the payload against the *applied* MsgStartInference, sign the receipt, run the mock
// model, and propose MsgFinishInference with honest token counts. A mismatch is a refusal: no
// receipt, nothing executed (§10 item 5).
import { setTimeout as sleep } from 'node:timers/promises';
import { sha256 } from '@gonka-gateway/chain';
import {
  type EncodedTx,
  executorReceiptBytes,
  finishProposerBytes,
  InferenceStatus,
  type MsgStartInference,
  newMsg,
  type PayloadWire,
  promptHash,
  signPreimage,
  txOf,
} from '@gonka-gateway/devshard';
import type { ChatMessage, ChatRequest } from '../model/chat-request.js';
import { completionBody, type MockModel, streamFrames } from '../model/mock-model.js';
import type { HostSession } from './session.js';
import type { HostStore } from './session-store.js';
import type { SseWriter } from './sse-writer.js';
import { publishExecution, tamperFrames } from './validator.js';

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** What a payload is checked against: the applied start, or the inference record built from it. */
export interface SignedStartFields {
  readonly promptHash: Uint8Array;
  readonly model: string;
  readonly inputLength: bigint;
  readonly maxTokens: bigint;
  readonly startedAt: bigint;
}

/**
 * Why `payload` does not match the signed start, or null when it does: prompt hash of the exact
 * prompt bytes (§2.5), model, input_length, max_tokens, started_at (§4.3 PayloadJSON).
 */
export function payloadMismatch(start: SignedStartFields, payload: PayloadWire): string | null {
  if (payload.model !== start.model) return 'model differs from the signed start';
  if (payload.inputLength !== start.inputLength) return 'input_length differs from the signed start';
  if (payload.maxTokens !== start.maxTokens) return 'max_tokens differs from the signed start';
  if (payload.startedAt !== start.startedAt) return 'started_at differs from the signed start';
  let hash: Uint8Array;
  try {
    hash = promptHash(payload.prompt);
  } catch {
    return 'prompt is not JSON';
  }
  return sameBytes(hash, start.promptHash) ? null : 'prompt hash differs from the signed start';
}

function isMessage(m: unknown): m is ChatMessage {
  if (m === null || typeof m !== 'object') return false;
  const { role, content } = m as Record<string, unknown>;
  if (typeof role !== 'string' || role === '') return false;
  if (typeof content === 'string') return true;
  return (
    Array.isArray(content) &&
    content.every(
      (p) =>
        p !== null &&
        typeof p === 'object' &&
        (p as Record<string, unknown>).type === 'text' &&
        typeof (p as Record<string, unknown>).text === 'string',
    )
  );
}

/**
 * The mock model's request: the prompt body's messages, sampling fields, stop, logprobs, tools,
 * tool_choice and response_format, the signed model, and at most the signed max_tokens (the
 * reservation covers no more). Null when the prompt is not an OpenAI chat request the model can run
 * (the host then refuses instead of signing a receipt it cannot honour).
 */
export function chatRequestFor(
  start: MsgStartInference,
  payload: PayloadWire,
  stream: boolean,
): ChatRequest | null {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(payload.prompt).toString('utf8'));
  } catch {
    return null;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  if (!Array.isArray(b.messages) || b.messages.length === 0 || !b.messages.every(isMessage)) return null;
  const requested = [b.max_completion_tokens, b.max_tokens].find(
    (v): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0,
  );
  const cap = Number(start.maxTokens);
  // Chunks when the request asks for a stream (InferenceRequest.stream) or the prompt body does, as
  // the reference executor forwards the body to its engine; otherwise one chat.completion line.
  const streamed = stream || b.stream === true;
  const opt = (key: string) => (typeof b[key] === 'number' ? { [key]: b[key] as number } : {});
  const options = b.stream_options as { include_usage?: unknown } | undefined;
  return {
    model: start.model,
    messages: b.messages,
    max_tokens: requested !== undefined && requested < cap ? requested : cap,
    stream: streamed,
    ...(streamed && options?.include_usage === true ? { stream_options: { include_usage: true } } : {}),
    ...opt('temperature'),
    ...opt('top_p'),
    ...opt('seed'),
    ...(b.logprobs === true ? { logprobs: true } : {}),
    ...(typeof b.stop === 'string' || (Array.isArray(b.stop) && b.stop.every((x) => typeof x === 'string'))
      ? { stop: b.stop as string | string[] }
      : {}),
    ...opt('top_logprobs'),
    ...shapeOf(b),
  };
}

/** The fields that shape the answer (tools, structured output), as the mock model reads them. */
function shapeOf(b: Record<string, unknown>): Pick<ChatRequest, 'tools' | 'tool_choice' | 'response_format'> {
  const tools = Array.isArray(b.tools)
    ? b.tools.filter(
        (t): t is NonNullable<ChatRequest['tools']>[number] =>
          typeof (t as { function?: { name?: unknown } })?.function?.name === 'string',
      )
    : [];
  const choice = b.tool_choice;
  const format = b.response_format as ChatRequest['response_format'] | undefined;
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(choice === 'none' ||
    choice === 'auto' ||
    choice === 'required' ||
    typeof (choice as { function?: { name?: unknown } })?.function?.name === 'string'
      ? { tool_choice: choice as ChatRequest['tool_choice'] }
      : {}),
    ...(format && typeof format === 'object' && typeof format.type === 'string'
      ? { response_format: format }
      : {}),
  };
}

export interface ReceiptGrant {
  readonly start: MsgStartInference;
  readonly chat: ChatRequest;
  readonly confirmedAt: bigint;
  /** executor_sig over ExecutorReceiptContent (§2.4). */
  readonly receipt: Uint8Array;
}

export type ReceiptDecision = ReceiptGrant | { readonly refused: string };

/**
 * Receipt for the applied start of inference `id`, as its executor, or the reason for refusing. On a
 * grant the matching MsgConfirmStart joins the mempool, so a lost response does not lose the receipt.
 * `refuseFault` is asked last (it consumes a use of the `refuse` fault only when a receipt was due).
 */
export function decideReceipt(
  session: HostSession,
  store: HostStore,
  id: bigint,
  payload: PayloadWire,
  stream: boolean,
  nowSeconds: bigint,
  refuseFault: () => boolean,
): ReceiptDecision {
  const start = session.applied(id)?.start;
  if (!start || start.inferenceId !== id) return { refused: `no applied start at nonce ${id}` };
  if (!session.isExecutorOf(id)) return { refused: 'not the executor' };
  const rec = session.state.inferences.get(id);
  // Pending, or Started when the user retries after losing the response (a fresh receipt is harmless).
  if (!rec || (rec.status !== InferenceStatus.Pending && rec.status !== InferenceStatus.Started)) {
    return { refused: 'inference is not pending' };
  }
  const mismatch = payloadMismatch(start, payload);
  if (mismatch) return { refused: mismatch };
  const chat = chatRequestFor(start, payload, stream);
  if (!chat) return { refused: 'prompt is not a chat request' };
  if (refuseFault()) return { refused: 'refuse fault' };
  const preimage = executorReceiptBytes({
    inferenceId: id,
    promptHash: start.promptHash,
    model: start.model,
    inputLength: start.inputLength,
    maxTokens: start.maxTokens,
    startedAt: start.startedAt,
    escrowId: session.id,
    confirmedAt: nowSeconds,
  });
  const receipt = store.sign(preimage, (key) => signPreimage(key, preimage));
  session.mempool.add(
    txOf.confirmStart(
      newMsg.confirmStart({ inferenceId: id, executorSig: receipt, confirmedAt: nowSeconds }),
    ),
  );
  return { start, chat, confirmedAt: nowSeconds, receipt };
}

/** Where an execution writes: the chat stream (with an optional cut), or nowhere (a challenge). */
export interface ExecutionSink {
  readonly sse?: SseWriter;
  /** The `cut-stream` fault: destroy the stream after this many model frames. */
  readonly cutAfterFrames?: number;
  /**
   * The `bad-output` fault: serve altered text; `error-body`: serve an error body instead;
   * `empty-after-receipt` (`empty`): serve no frame at all, Finish with output_tokens 0.
   */
  readonly output?: 'bad' | 'error' | 'empty';
  /** The `tampered-finish` fault: the Finish hashes other bytes than the ones served. */
  readonly tamperFinish?: boolean;
  /**
   * The `slow` fault: this latency instead of the model's; its waits end as soon as the client has
   * gone (`sse.signal`), and the execution then completes without them.
   */
  readonly slow?: { readonly firstTokenMs: number; readonly perTokenMs: number };
}

/** What an `error-body` executor serves: one OpenAI error object as a data line. */
const ERROR_FRAME = `data: ${JSON.stringify({ error: { message: 'model backend error', type: 'server_error', code: 500 } })}\n\n`;

/**
 * The `error-event` fault's line (without `data: `): an OpenAI error object, `type`
 * `invalid_request_error` for a 4xx status (the request itself is bad) else `api_error`, with the
 * status as both `code` and `status`.
 */
export function errorEventJson(status: number, message: string): string {
  const type = status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
  return JSON.stringify({ error: { message, type, code: status, status } });
}

/**
 * The model output as SSE frames: chunks (stream) or one `chat.completion` line, never [DONE]; and
 * the output tokens the Finish bills for them.
 */
function modelFrames(model: MockModel, chat: ChatRequest, output?: ExecutionSink['output']) {
  const completion = model.complete(chat);
  const outputTokens = completion.completionTokens;
  if (output === 'empty') return { completion, frames: [] as string[], outputTokens: 0 };
  const frames = chat.stream
    ? streamFrames(completion, chat.stream_options?.include_usage === true).slice(0, -1)
    : [`data: ${JSON.stringify(completionBody(completion))}\n\n`];
  if (output === 'error') return { completion, frames: [ERROR_FRAME], outputTokens };
  return { completion, frames: output === 'bad' ? tamperFrames(frames) : frames, outputTokens };
}

/** Waits `ms`, or less when `signal` aborts first (no timer is left behind either way). */
async function waitUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0 || signal?.aborted) return;
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
  } catch {
    // Aborted: the client has gone, nothing is waiting for these frames any more.
  }
}

/**
 * Runs the inference and proposes its Finish: response_hash = sha256 of exactly the bytes served
 * between the receipt and the meta event, input/output tokens from the mock model's tokenizer. The
 * host completes the inference even when the stream is cut or the client leaves, so the Finish waits
 * in the mempool for the next contact. Latency follows the model's settings as sendCompletion does,
 * or the `slow` fault's, whose waits end when the client leaves.
 */
export async function execute(
  session: HostSession,
  store: HostStore,
  model: MockModel,
  grant: ReceiptGrant,
  sink: ExecutionSink,
): Promise<void> {
  const id = grant.start.inferenceId;
  session.executions.set(id, { phase: 'running' });
  const { completion, frames, outputTokens } = modelFrames(model, grant.chat, sink.output);
  const { timeToFirstTokenMs, perTokenMs } = sink.slow
    ? { timeToFirstTokenMs: sink.slow.firstTokenMs, perTokenMs: sink.slow.perTokenMs }
    : model.latency;
  const signal = sink.slow ? sink.sse?.signal : undefined;
  const wait = (ms: number) => (sink.slow ? waitUnlessAborted(ms, signal) : sleep(ms));
  // A cut always lands before the model output is complete (a non-streamed answer is one frame).
  const cutAt =
    sink.cutAfterFrames === undefined ? undefined : Math.min(sink.cutAfterFrames, frames.length - 1);
  const write = async (i: number) => {
    if (!sink.sse) return;
    if (cutAt !== undefined && i >= cutAt) await sink.sse.cut();
    else sink.sse.raw(frames[i]!);
  };
  if (frames.length === 0) {
    // `empty-after-receipt`: nothing to serve, so nothing to wait for.
  } else if (timeToFirstTokenMs === 0 && perTokenMs === 0 && cutAt === undefined) {
    sink.sse?.raw(frames.join('')); // no latency to model: one write instead of one per frame
  } else if (!grant.chat.stream) {
    const delay = timeToFirstTokenMs + perTokenMs * Math.max(0, completion.completionTokens - 1);
    if (delay > 0) await wait(delay);
    await write(0);
  } else {
    if (timeToFirstTokenMs > 0) await wait(timeToFirstTokenMs);
    for (let i = 0; i < frames.length; i++) {
      // Frames 0 (role) and 1 (first token) leave together; each later token perTokenMs apart.
      if (i >= 2 && i <= completion.pieces.length && perTokenMs > 0) await wait(perTokenMs);
      await write(i);
    }
  }
  const served = frames.join('');
  publishExecution(model, session.id, id, grant.chat, served); // what validators re-check
  session.mempool.add(
    finishTx(
      session,
      store,
      id,
      sink.tamperFinish ? `${served}tampered` : served,
      BigInt(completion.promptTokens),
      BigInt(outputTokens),
    ),
  );
  session.mempool.prune(session.state);
  session.executions.set(id, { phase: 'done', served });
}

function finishTx(
  session: HostSession,
  store: HostStore,
  id: bigint,
  served: string,
  inputTokens: bigint,
  outputTokens: bigint,
): EncodedTx {
  const msg = newMsg.finishInference({
    inferenceId: id,
    responseHash: sha256(new TextEncoder().encode(served)),
    inputTokens,
    outputTokens,
    executorSlot: Number(id % BigInt(session.state.group.slots.length)),
    escrowId: session.id,
  });
  // The proposer signature covers the message with proposer_sig cleared (§2.4), as signFinish does.
  const preimage = finishProposerBytes(msg);
  return txOf.finishInference({
    ...msg,
    proposerSig: store.sign(preimage, (key) => signPreimage(key, preimage)),
  });
}
