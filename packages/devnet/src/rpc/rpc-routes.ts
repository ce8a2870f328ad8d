// CometBFT RPC (chain-and-network.md §3.2), served on :26657 and under {node}/chain-rpc: /status
// (heights as strings, RFC 3339 times with nanoseconds), /health, and the same two methods over
// JSON-RPC POST /. Chain queries faults apply here too (target `chainQuery`).
import type { FastifyInstance } from 'fastify';
import type { DevnetCore } from '../core.js';
import { hexUpper, rfc3339Nano, toBase64 } from '../encoding.js';
import { installQueryFault } from '../http.js';

function statusResult(core: DevnetCore) {
  const b = core.blocks.latest;
  const g = core.blocks.genesis;
  const proposer = core.hosts[0]!;
  return {
    node_info: {
      protocol_version: { p2p: '8', block: '11', app: '0' },
      id: 'devnet',
      listen_addr: 'tcp://127.0.0.1:26656',
      network: core.chainId,
      version: '0.38.17',
      channels: '40202122233038606100',
      moniker: 'gonka-devnet',
      other: { tx_index: 'on', rpc_address: 'tcp://127.0.0.1:26657' },
    },
    sync_info: {
      latest_block_hash: hexUpper(b.blockHash),
      latest_app_hash: hexUpper(b.appHash),
      latest_block_height: b.height.toString(),
      latest_block_time: rfc3339Nano(b.timeNs),
      earliest_block_hash: hexUpper(g.blockHash),
      earliest_app_hash: hexUpper(g.appHash),
      earliest_block_height: g.height.toString(),
      earliest_block_time: rfc3339Nano(g.timeNs),
      catching_up: false,
    },
    validator_info: {
      address: hexUpper(proposer.key.publicKey.subarray(1, 21)),
      pub_key: { type: 'tendermint/PubKeySecp256k1', value: toBase64(proposer.key.publicKey) },
      voting_power: proposer.weight.toString(),
    },
  };
}

const envelope = (id: unknown, result: unknown) => ({ jsonrpc: '2.0', id, result });

export async function rpcRoutes(app: FastifyInstance, opts: { core: DevnetCore }): Promise<void> {
  const { core } = opts;
  installQueryFault(app, core.faults, 'chainQuery', (f) => ({
    jsonrpc: '2.0',
    id: -1,
    error: { code: -32603, message: 'Internal error', data: `devnet fault (${f.status})` },
  }));

  app.get('/status', async () => envelope(-1, statusResult(core)));
  app.get('/health', async () => envelope(-1, {}));

  app.post<{ Body: { jsonrpc?: string; id?: unknown; method: string } }>(
    '/',
    {
      schema: {
        body: {
          type: 'object',
          required: ['method'],
          properties: { jsonrpc: { type: 'string' }, method: { type: 'string' } },
        },
      },
    },
    async (request) => {
      const { id = -1, method } = request.body;
      if (method === 'status') return envelope(id, statusResult(core));
      if (method === 'health') return envelope(id, {});
      return { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found', data: method } };
    },
  );
}
