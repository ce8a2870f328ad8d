// One chat request served on an escrow this replica owns (architecture §5): the session takes the
// next nonce for the exact body bytes and streams the host's OpenAI chunks; they reach the client as
// they arrive (Nagle off, no compression, one write per event) and protocol events stay here. A host
// that fails before the first byte reached the client is retried on the next pick with a new nonce
// (bounded); after that, an error is one `data: {"error":…}` frame. A client that leaves only stops
// the chunks: handlers.signal lets the session finish its money work (receipt, Finish) on its own.
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { InferenceResult } from '@gonka-gateway/devshard/session';
import type { OwnedSessions } from '@gonka-gateway/escrow-runtime';
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { escrowNotServing, mapFailure, toGatewayError } from '../error-map.js';
import type { ProxyMetrics } from '../proxy-metrics.js';
import {
  assembleCompletion,
  type DataFrame,
  parseDataLine,
  streamChunkUsage,
  type Usage,
  usageOf,
} from './completion.js';
import { pickOwned, type Reservation } from './pick-escrow.js';

export interface ServeInput {
  readonly model: string;
  /** The exact bytes the host runs. */
  readonly body: Buffer;
  readonly reservation: Reservation;
  readonly stream: boolean;
  /** Only this escrow (POST /devshard/{id}/v1/chat/completions). */
  readonly escrowId?: bigint;
  readonly maxAttempts: number;
  readonly capacityAware: boolean;
  readonly headers: Readonly<Record<string, string>>;
}

export type ServeOutcome =
  | { readonly kind: 'not_here' }
  | {
      readonly kind: 'served';
      readonly status: number;
      readonly escrowId: bigint | undefined;
      readonly nonces: readonly bigint[];
      readonly outputTokens: number;
      readonly inputTokens: number | undefined;
      readonly ttftMs: number | undefined;
      readonly upstreamMs: number;
    };

const DONE = Buffer.from('data: [DONE]\n\n');
const JSON_TYPE = 'application/json; charset=utf-8';
const SEP = Buffer.from('\n\n');

export async function serveOnSession(
  request: FastifyRequest,
  reply: FastifyReply,
  input: ServeInput,
  deps: { sessions: OwnedSessions; metrics: ProxyMetrics },
): Promise<ServeOutcome> {
  const started = performance.now();
  const client = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) client.abort();
  });
  /** Escrows already used by this request, and those that refused it outright (SessionError). */
  const tried = new Set<bigint>();
  const hardFailed = new Set<bigint>();
  const nonces: bigint[] = [];
  let out: Readable | undefined;
  let ttftMs: number | undefined;
  let upstreamMs = 0;
  let outputTokens = 0;
  let inputTokens: number | undefined;
  let lastError: unknown;
  let lastEscrow: bigint | undefined;
  const count = (usage: Usage | undefined) => {
    if (usage) inputTokens = usage.prompt_tokens ?? inputTokens;
    if (usage?.completion_tokens !== undefined) outputTokens = usage.completion_tokens;
    else outputTokens++;
  };

  const open = () => {
    if (out) return out;
    ttftMs = performance.now() - started;
    request.raw.socket?.setNoDelay(true);
    // Chunks are pushed into a plain Readable that Fastify pipes to the socket: a PassThrough's
    // writable half cost ~0.4 µs more per chunk, and nothing here waits on backpressure (issue 10).
    out = new Readable({ read() {} });
    reply
      .status(200)
      .headers({
        ...input.headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      })
      .send(out);
    return out;
  };

  for (let attempt = 0; attempt < input.maxAttempts; attempt++) {
    const owned = deps.sessions.list();
    // A retry prefers another escrow; the same one (next nonce, next host) when it is the only one.
    const pick =
      input.escrowId !== undefined
        ? owned.find((e) => e.escrowId === input.escrowId && e.routable)
        : (pickOwned(owned, input.model, input.reservation, tried, input.capacityAware) ??
          (attempt > 0
            ? pickOwned(owned, input.model, input.reservation, hardFailed, input.capacityAware)
            : undefined));
    if (!pick) break;
    if (attempt > 0) deps.metrics.retries.inc();
    lastEscrow = pick.escrowId;
    const frames: DataFrame[] = [];
    let result: InferenceResult;
    const t0 = performance.now();
    try {
      result = await deps.sessions.infer(
        pick.escrowId,
        {
          body: new Uint8Array(input.body.buffer, input.body.byteOffset, input.body.byteLength),
          model: input.model,
          inputLength: input.reservation.inputTokens,
          maxTokens:
            pick.maxTokensFloor !== undefined && input.reservation.maxTokens < pick.maxTokensFloor
              ? pick.maxTokensFloor
              : input.reservation.maxTokens,
          stream: input.stream,
        },
        {
          signal: client.signal,
          onChunk: (line) => {
            if (!input.stream) {
              // Parsed once: the usage and the answer both come from this parse.
              const frame = parseDataLine(line);
              if (frame) frames.push(frame);
              count(usageOf(frame?.value));
              return;
            }
            count(streamChunkUsage(line));
            open().push(Buffer.concat([line, SEP]));
          },
          onDone: () => {
            if (input.stream) open().push(DONE);
          },
        },
      );
    } catch (error) {
      upstreamMs += performance.now() - t0;
      lastError = error;
      tried.add(pick.escrowId);
      hardFailed.add(pick.escrowId);
      if (client.signal.aborted || !mapFailure(error).tryNextEscrow) break;
      continue;
    }
    upstreamMs += performance.now() - t0;
    tried.add(pick.escrowId);
    nonces.push(result.nonce);
    if (result.status === 'completed' || out !== undefined || result.clientGone || client.signal.aborted) {
      if (result.status === 'failed') lastError = result.error;
      return finish(result.status === 'completed' ? 200 : 502, frames, result);
    }
    // The host failed before anything reached the client: another nonce, maybe another host.
    lastError = result.error;
  }

  // Nothing local could start it — no escrow, or each one refused before a nonce (rotation drains an
  // escrow while another replica owns its replacement, spec §3.4): the route forwards to an owner.
  if (nonces.length === 0 && out === undefined && (lastEscrow === undefined || escrowNotServing(lastError)))
    return { kind: 'not_here' };
  return finish(undefined, [], undefined);

  function finish(status: number | undefined, frames: DataFrame[], result: InferenceResult | undefined) {
    const served = (code: number): ServeOutcome => ({
      kind: 'served',
      status: code,
      escrowId: lastEscrow,
      nonces,
      outputTokens,
      inputTokens,
      ttftMs,
      upstreamMs,
    });
    if (status === 200 && result) {
      if (input.stream) {
        if (out) out.push(null);
        else {
          // A stream with no chunk at all: still a well-formed SSE answer.
          const empty = open();
          empty.push(DONE);
          empty.push(null);
        }
        return served(200);
      }
      const body = assembleCompletion(frames, { id: `chatcmpl-${request.id}`, model: input.model });
      // JSON text already: the content type Fastify gives an object, without serializing it again.
      void reply.status(200).headers(input.headers).type(JSON_TYPE).send(body);
      return served(200);
    }
    const error = lastError
      ? toGatewayError(lastError)
      : new GatewayError('no_escrow_available', 'no escrow can serve this request');
    if (out) {
      // Headers are gone: one error frame, then close (issue 11 §6).
      out.push(Buffer.from(`data: ${JSON.stringify(error.toBody())}\n\n`));
      out.push(null);
      return served(error.status);
    }
    if (error.status === 503) reply.header('retry-after', '10');
    void reply.status(error.status).headers(input.headers).send(error.toBody());
    return served(error.status);
  }
}
