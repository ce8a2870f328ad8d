// Chain REST queries (Cosmos LCD paths, chain-and-network.md §3.1), served on :1317 and under
// {node}/chain-api. Warm-key grants: GET /productscience/inference/inference/grantees_by_message_type/
// {granter}/{msg_type_url} → {grantees: [{address, pub_key}]}, the chain's own query path; the type
// URL may be sent escaped (%2Finference.inference.MsgStartInference) or as a literal path; and the
// cosmos authz GET /cosmos/authz/v1beta1/grants/granter/{granter} → {grants, pagination}.
import { isAddress } from '@gonka-gateway/chain';
import type { FastifyInstance } from 'fastify';
import type { DevnetCore } from '../core.js';
import { hexUpper, parseCanonicalUint, rfc3339Nano, toBase64 } from '../encoding.js';
import { installQueryFault } from '../http.js';
import { balanceOf, spendableOf } from './bank.js';
import { accountJson, balancesJson, escrowJson, grpcError, paramsJson } from './json-views.js';
import { MSG_START_INFERENCE } from './params.js';
import { registerTxRoutes } from './tx-routes.js';

const P = '/productscience/inference/inference';
const addressParams = {
  type: 'object',
  required: ['address'],
  properties: { address: { type: 'string', minLength: 1 } },
} as const;

export async function chainRestRoutes(app: FastifyInstance, opts: { core: DevnetCore }): Promise<void> {
  const { core } = opts;
  const { chain, blocks } = core;
  installQueryFault(app, core.faults, 'chainQuery', (f) =>
    grpcError(14, `devnet fault: chain query failed (${f.status})`),
  );
  app.setErrorHandler((err: Error & { validation?: unknown; statusCode?: number }, _request, reply) => {
    if (err.validation) return reply.code(400).send(grpcError(3, err.message));
    return reply.code(err.statusCode ?? 500).send(grpcError(13, err.message));
  });
  const badAddress = (address: string) => grpcError(3, `decoding bech32 failed: invalid address ${address}`);

  app.get(`${P}/params`, async () => ({ params: paramsJson(chain.effectiveParams()) }));

  app.get<{ Params: { id: string } }>(
    `${P}/devshard_escrow/:id`,
    {
      schema: {
        params: {
          type: 'object',
          required: ['id'],
          properties: { id: { type: 'string', pattern: '^[0-9]+$' } },
        },
      },
    },
    async (request, reply) => {
      const id = parseCanonicalUint(request.params.id);
      if (id === null) return reply.code(400).send(grpcError(3, 'escrow id must be a canonical uint64'));
      return escrowJson(chain.committed.escrows.get(id));
    },
  );

  app.get(`${P}/devshard_approved_versions`, async () => ({
    versions: chain.effectiveParams().devshardEscrow.approvedVersions.map((v) => ({ ...v })),
  }));

  const participantJson = (address: string) => {
    const p = chain.participant(address)!;
    return {
      index: p.address,
      address: p.address,
      weight: Number(p.weight),
      inference_url: p.inferenceUrl,
      status: 'ACTIVE',
      validator_key: toBase64(p.validatorKey),
      coin_balance: (chain.committed.epochBalances.get(address) ?? 0n).toString(),
      epochs_completed: 0,
      models: [...p.models],
    };
  };
  app.get(`${P}/participant`, async () => ({
    participant: chain.participants.map((p) => participantJson(p.address)),
    pagination: { next_key: null, total: String(chain.participants.length) },
  }));
  app.get<{ Params: { address: string } }>(
    `${P}/participant/:address`,
    { schema: { params: addressParams } },
    async (request, reply) => {
      const { address } = request.params;
      if (!isAddress(address)) return reply.code(400).send(badAddress(address));
      if (!chain.participant(address))
        return reply.code(404).send(grpcError(5, `participant ${address} not found`));
      return { participant: participantJson(address) };
    },
  );

  app.get<{ Params: { epoch: string }; Querystring: { model_id?: string } }>(
    `${P}/epoch_group_data/:epoch`,
    {
      schema: {
        params: {
          type: 'object',
          required: ['epoch'],
          properties: { epoch: { type: 'string', pattern: '^[0-9]+$' } },
        },
        querystring: { type: 'object', properties: { model_id: { type: 'string' } } },
      },
    },
    async (request, reply) => {
      const modelId = request.query.model_id ?? '';
      const model = core.governanceModels.find((m) => m.id === modelId);
      const weights = modelId ? chain.epochGroupWeights(modelId) : [];
      if (modelId && (!model || weights.length === 0)) {
        return reply.code(404).send(grpcError(5, `epoch group data not found for model ${modelId}`));
      }
      return {
        epoch_group_data: {
          epoch_index: request.params.epoch,
          model_id: modelId,
          validation_weights: weights.map((w) => ({
            member_address: w.address,
            weight: w.weight.toString(),
          })),
          model_snapshot: model ? { id: model.id, validation_threshold: model.validation_threshold } : null,
        },
      };
    },
  );

  app.get<{ Params: { granter: string; '*': string } }>(
    `${P}/grantees_by_message_type/:granter/*`,
    async (request, reply) => {
      const { granter } = request.params;
      if (!isAddress(granter)) return reply.code(400).send(badAddress(granter));
      const typeUrl = `/${decodeURIComponent(request.params['*']).replace(/^\/+/, '')}`;
      const grantees = typeUrl === MSG_START_INFERENCE ? [...(chain.warmKeyGrants.get(granter) ?? [])] : [];
      return {
        grantees: grantees.map((address) => {
          const pubKey = chain.committed.accounts.get(address)?.pubKey;
          return { address, pub_key: pubKey ? toBase64(pubKey) : '' };
        }),
      };
    },
  );

  // The standard cosmos authz query the gateway reads warm keys with (chain-and-network.md §2.6 Settle 5):
  // every grant of the granter; the devnet holds only MsgStartInference grants, without expiration.
  app.get<{ Params: { granter: string } }>(
    '/cosmos/authz/v1beta1/grants/granter/:granter',
    {
      schema: {
        params: {
          type: 'object',
          required: ['granter'],
          properties: { granter: { type: 'string', minLength: 1 } },
        },
      },
    },
    async (request, reply) => {
      const { granter } = request.params;
      if (!isAddress(granter)) return reply.code(400).send(badAddress(granter));
      const grantees = [...(chain.warmKeyGrants.get(granter) ?? [])];
      return {
        grants: grantees.map((grantee) => ({
          granter,
          grantee,
          authorization: { '@type': '/cosmos.authz.v1beta1.GenericAuthorization', msg: MSG_START_INFERENCE },
          expiration: null,
        })),
        pagination: { next_key: null, total: String(grantees.length) },
      };
    },
  );

  app.get<{ Params: { address: string } }>(
    '/cosmos/auth/v1beta1/accounts/:address',
    { schema: { params: addressParams } },
    async (request, reply) => {
      const { address } = request.params;
      if (!isAddress(address)) return reply.code(400).send(badAddress(address));
      const account = chain.committed.accounts.get(address);
      if (!account) return reply.code(404).send(grpcError(5, `account ${address} not found`));
      return accountJson(account);
    },
  );

  app.get<{ Params: { address: string } }>(
    '/cosmos/bank/v1beta1/balances/:address',
    { schema: { params: addressParams } },
    async (request, reply) => {
      const { address } = request.params;
      if (!isAddress(address)) return reply.code(400).send(badAddress(address));
      return balancesJson(balanceOf(chain.committed, address));
    },
  );

  app.get<{ Params: { address: string } }>(
    '/cosmos/bank/v1beta1/spendable_balances/:address',
    { schema: { params: addressParams } },
    async (request, reply) => {
      const { address } = request.params;
      if (!isAddress(address)) return reply.code(400).send(badAddress(address));
      return balancesJson(spendableOf(chain.committed, core.faults, address));
    },
  );

  app.get('/cosmos/base/tendermint/v1beta1/node_info', async () => ({
    default_node_info: {
      protocol_version: { p2p: '8', block: '11', app: '0' },
      default_node_id: 'devnet',
      listen_addr: 'tcp://127.0.0.1:26656',
      network: core.chainId,
      version: '0.38.17',
      channels: '',
      moniker: 'gonka-devnet',
      other: { tx_index: 'on', rpc_address: 'tcp://127.0.0.1:26657' },
    },
    application_version: {
      name: 'inferenced',
      app_name: 'inferenced',
      version: 'devnet',
      git_commit: '',
      build_tags: '',
      go_version: '',
      build_deps: [],
      cosmos_sdk_version: 'v0.53.3-ps5',
    },
  }));

  app.get('/cosmos/base/tendermint/v1beta1/blocks/latest', async () => {
    const b = blocks.latest;
    return {
      block_id: { hash: toBase64(b.blockHash) },
      block: {
        header: {
          chain_id: core.chainId,
          height: b.height.toString(),
          time: rfc3339Nano(b.timeNs),
          app_hash: toBase64(b.appHash),
        },
        data: { txs: [] },
      },
      sdk_block: {
        header: {
          chain_id: core.chainId,
          height: b.height.toString(),
          time: rfc3339Nano(b.timeNs),
          app_hash: hexUpper(b.appHash),
        },
      },
    };
  });

  registerTxRoutes(app, core);
}
