// An unsigned OpenAI-compatible endpoint backed by the mock model, like a host's ML node (vLLM)
// behind its API. The devnet mounts it at {node}/devnet/mlnode; benchmarks measure the model here.
import type { FastifyInstance } from 'fastify';
import { sendCompletion } from './chat-reply.js';
import { type ChatRequest, chatCompletionResponseSchema, chatRequestSchema } from './chat-request.js';
import type { MockModel } from './mock-model.js';

export async function modelRoutes(app: FastifyInstance, opts: { model: MockModel }): Promise<void> {
  app.post<{ Body: ChatRequest }>(
    '/v1/chat/completions',
    { schema: { body: chatRequestSchema, response: { 200: chatCompletionResponseSchema } } },
    async (request, reply) => {
      await sendCompletion(reply, opts.model, request.body);
      return reply;
    },
  );
  app.get('/v1/models', async () => ({ object: 'list', data: [] }));
}
