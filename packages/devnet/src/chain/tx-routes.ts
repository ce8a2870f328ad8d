// Tx broadcast, lookup and simulation (chain-and-network.md §2.4). A broadcast returns the CheckTx
// result (code 0 = accepted into the mempool; the tx executes in the next block). Broadcast faults
// apply only to txs CheckTx accepted.
import type { FastifyInstance } from 'fastify';
import type { DevnetCore } from '../core.js';
import { fromBase64 } from '../encoding.js';
import { broadcastResponseJson, grpcError, indexedTxJson, simulateJson } from './json-views.js';

const MODES = ['BROADCAST_MODE_SYNC', 'BROADCAST_MODE_ASYNC'] as const;

export function registerTxRoutes(app: FastifyInstance, core: DevnetCore): void {
  const { blocks, faults, chain } = core;

  app.post<{ Body: { tx_bytes: string; mode: string } }>(
    '/cosmos/tx/v1beta1/txs',
    {
      schema: {
        body: {
          type: 'object',
          required: ['tx_bytes', 'mode'],
          properties: { tx_bytes: { type: 'string', minLength: 1 }, mode: { type: 'string' } },
        },
      },
    },
    async (request, reply) => {
      const { tx_bytes, mode } = request.body;
      if (!(MODES as readonly string[]).includes(mode)) {
        return reply
          .code(400)
          .send(grpcError(3, `unsupported broadcast mode ${mode}; use one of ${MODES.join(', ')}`));
      }
      const bytes = fromBase64(tx_bytes);
      if (!bytes) return reply.code(400).send(grpcError(3, 'tx_bytes is not valid base64'));

      const fault = faults.settings.broadcast;
      const outcome = blocks.broadcast(bytes, {
        include: fault?.mode !== 'never-included',
        index: fault?.mode !== 'never-indexed',
      });
      if (outcome.result.code === 0 && fault) {
        faults.takeBroadcastFault();
        if (fault.mode === 'drop-connection' || fault.mode === 'no-response') {
          reply.hijack();
          if (fault.mode === 'drop-connection') request.raw.socket.destroy();
          return;
        }
      }
      if (mode === 'BROADCAST_MODE_ASYNC') {
        // Async does not wait for CheckTx: the caller only learns the hash.
        return broadcastResponseJson(outcome.hash, { ...outcome.result, code: 0, codespace: '', rawLog: '' });
      }
      return broadcastResponseJson(outcome.hash, outcome.result);
    },
  );

  app.get<{ Params: { hash: string } }>(
    '/cosmos/tx/v1beta1/txs/:hash',
    {
      schema: {
        params: {
          type: 'object',
          required: ['hash'],
          properties: { hash: { type: 'string', pattern: '^(0x)?[0-9A-Fa-f]{64}$' } },
        },
      },
    },
    async (request, reply) => {
      const hash = request.params.hash.replace(/^0x/, '').toUpperCase();
      const indexed = chain.txIndex.get(hash);
      if (!indexed) return reply.code(404).send(grpcError(5, `tx not found: ${hash}`));
      return indexedTxJson(indexed);
    },
  );

  app.post<{ Body: { tx_bytes: string } }>(
    '/cosmos/tx/v1beta1/simulate',
    {
      schema: {
        body: {
          type: 'object',
          required: ['tx_bytes'],
          properties: { tx_bytes: { type: 'string', minLength: 1 } },
        },
      },
    },
    async (request, reply) => {
      const bytes = fromBase64(request.body.tx_bytes);
      if (!bytes) return reply.code(400).send(grpcError(3, 'tx_bytes is not valid base64'));
      const result = blocks.simulate(bytes);
      if (result.code !== 0) return reply.code(400).send(grpcError(2, result.rawLog));
      return simulateJson(result);
    },
  );
}
