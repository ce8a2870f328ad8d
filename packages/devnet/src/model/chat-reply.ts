// Writes a mock completion to a Fastify reply: JSON, or SSE frames with the configured latency.
// Shared by the node's direct endpoint, the participants' servers and (later) the devshard hosts.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply } from 'fastify';
import type { ChatRequest } from './chat-request.js';
import { type Completion, completionBody, type MockModel, streamFrames } from './mock-model.js';

export async function sendCompletion(
  reply: FastifyReply,
  model: MockModel,
  req: ChatRequest,
): Promise<Completion> {
  const completion = model.complete(req);
  const { timeToFirstTokenMs, perTokenMs } = model.latency;
  if (!req.stream) {
    const delay = timeToFirstTokenMs + perTokenMs * Math.max(0, completion.completionTokens - 1);
    if (delay > 0) await sleep(delay);
    await reply.code(200).send(completionBody(completion));
    return completion;
  }

  const frames = streamFrames(completion, req.stream_options?.include_usage === true);
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  if (timeToFirstTokenMs === 0 && perTokenMs === 0) {
    raw.end(frames.join(''));
    return completion;
  }
  // Frame 0 (role) and frame 1 (first token) arrive after the time to first token; each later token
  // perTokenMs apart; the closing frames right after the last token.
  await sleep(timeToFirstTokenMs);
  for (let i = 0; i < frames.length; i++) {
    if (raw.destroyed) return completion;
    if (i >= 2 && i <= completion.pieces.length && perTokenMs > 0) await sleep(perTokenMs);
    raw.write(frames[i]);
  }
  raw.end();
  return completion;
}
