// Signed direct requests (chain-and-network.md §4, gateway-spec.md §5.2): POST /v1/chat/completions
// on the node and on every host, with that host as the provider (transfer) address. Checks, in the
// order the node's transfer path runs them: transfer-agent allowlist (403), Authorization present,
// developer gate (403), requester account and published pubkey, signature over the exact body bytes
// (scheme per devnet option), balance for (prompt estimate + max_tokens) × token_price, model served,
// X-Timestamp within [block time − timestamp_expiration, block time + timestamp_advance], no replay.
// Errors are `{"message": …}`, the node's (echo) error shape.
import type { IncomingMessage } from 'node:http';
import { directRequestMessage, isAddress, sha256, verifyDigest64 } from '@gonka-gateway/chain';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { spendableOf } from '../chain/bank.js';
import type { DevnetCore, HostIdentity } from '../core.js';
import { fromBase64 } from '../encoding.js';
import { sendCompletion } from '../model/chat-reply.js';
import {
  type ChatRequest,
  chatCompletionResponseSchema,
  chatRequestSchema,
  messageText,
  requestedMaxTokens,
} from '../model/chat-request.js';
import type { ReplayCache } from './replay-cache.js';

/** max_tokens assumed for the balance check when the request names none. */
export const DEFAULT_MAX_TOKENS = 5000;
const NS_PER_S = 1_000_000_000n;

/**
 * The node's prompt estimate: the byte length of every message's content plus a newline each
 * (decentralized-api getPromptTokenEstimation counts characters, not tokens).
 */
export function promptEstimate(req: ChatRequest): bigint {
  return req.messages.reduce((sum, m) => sum + BigInt(Buffer.byteLength(messageText(m.content)) + 1), 0n);
}

const fail = (reply: FastifyReply, status: number, message: string) => reply.code(status).send({ message });

export async function directInferenceRoutes(
  app: FastifyInstance,
  opts: { core: DevnetCore; host: HostIdentity; replay: ReplayCache },
): Promise<void> {
  const { core, host, replay } = opts;
  const { chain, blocks } = core;
  // The signature covers the exact body bytes, so keep them beside the parsed JSON.
  const rawBodies = new WeakMap<IncomingMessage, Buffer>();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    rawBodies.set(request.raw, body as Buffer);
    try {
      done(null, JSON.parse((body as Buffer).toString('utf8')));
    } catch {
      done(Object.assign(new Error('request body is not valid JSON'), { statusCode: 400 }), undefined);
    }
  });
  app.setErrorHandler((err: Error & { validation?: unknown; statusCode?: number }, _request, reply) =>
    fail(reply, err.validation ? 400 : (err.statusCode ?? 500), err.message),
  );

  app.post<{ Body: ChatRequest }>(
    '/v1/chat/completions',
    { schema: { body: chatRequestSchema, response: { 200: chatCompletionResponseSchema } } },
    async (request, reply) => {
      const params = chain.effectiveParams();
      const allowedTa = params.transferAgentAccess.allowedTransferAddresses;
      if (allowedTa.length > 0 && !allowedTa.includes(host.address))
        return fail(reply, 403, 'Transfer Agent not allowed');

      const authorization = request.headers.authorization;
      if (!authorization) return fail(reply, 401, 'Authorization is required');
      const requester = request.headers['x-requester-address'];
      if (typeof requester !== 'string' || !isAddress(requester)) {
        return fail(reply, 400, 'X-Requester-Address must be a gonka address');
      }
      const timestampText = request.headers['x-timestamp'];
      if (typeof timestampText !== 'string' || !/^[0-9]{1,20}$/.test(timestampText)) {
        return fail(reply, 400, 'X-Timestamp must be decimal nanoseconds');
      }
      const timestampNs = BigInt(timestampText);

      const height = blocks.latest.height;
      const gate = params.developerAccess;
      if (
        gate.untilBlockHeight !== 0n &&
        height < gate.untilBlockHeight &&
        !gate.allowedDeveloperAddresses.includes(requester)
      ) {
        return fail(
          reply,
          403,
          `inference requests are restricted until block height ${gate.untilBlockHeight}`,
        );
      }

      const account = chain.committed.accounts.get(requester);
      if (!account) return fail(reply, 401, 'account not found');
      if (!account.pubKey)
        return fail(reply, 401, 'pubkey unavailable: the account has not signed a transaction');

      const signature = fromBase64(authorization);
      const body = rawBodies.get(request.raw) ?? Buffer.alloc(0);
      const message = directRequestMessage(core.directScheme, body, timestampNs, host.address);
      if (!signature || !verifyDigest64(signature, sha256(message), account.pubKey)) {
        return fail(reply, 401, 'Unable to validate request against PubKey: invalid signature');
      }

      const req = request.body;
      const maxTokens = BigInt(requestedMaxTokens(req) ?? DEFAULT_MAX_TOKENS);
      const cost = (promptEstimate(req) + maxTokens) * params.devshardEscrow.tokenPrice;
      const spendable = spendableOf(chain.committed, core.faults, requester);
      if (spendable < cost) {
        return fail(
          reply,
          402,
          `insufficient balance: spendable ${spendable} ngonka, request needs up to ${cost} ngonka`,
        );
      }
      if (!chain.servedModels().includes(req.model)) {
        return fail(reply, 400, `model ${req.model} is not served in the current epoch`);
      }

      const blockTimeNs = blocks.latest.timeNs;
      const expirationNs = params.validation.timestampExpiration * NS_PER_S;
      const advanceNs = params.validation.timestampAdvance * NS_PER_S;
      if (blockTimeNs - timestampNs > expirationNs) return fail(reply, 400, 'Request timestamp is too old');
      if (timestampNs - blockTimeNs > advanceNs)
        return fail(reply, 400, 'Request timestamp is in the future');
      replay.prune(blockTimeNs - expirationNs);
      if (replay.has(authorization))
        return fail(reply, 400, 'AuthKey has already been used for a transfer request');
      replay.add(authorization, timestampNs);

      await sendCompletion(reply, core.model, req);
      return reply;
    },
  );
}
