// The public node API (chain-and-network.md §3.3): epochs, participants, models, accounts,
// identity, status. Node query faults apply to GETs here.
import { isAddress } from '@gonka-gateway/chain';
import type { FastifyInstance } from 'fastify';
import { spendableOf } from '../chain/bank.js';
import type { DevnetCore, HostIdentity } from '../core.js';
import { rfc3339Nano, toBase64 } from '../encoding.js';
import { installQueryFault } from '../http.js';
import { epochsLatestJson, participantsJson } from './epoch-json.js';
import { effectiveEpochAt } from './epoch-schedule.js';

export function identityJson(core: DevnetCore, host: HostIdentity) {
  return {
    address: host.address,
    warm_key_address: host.warmKey.address,
    block: Number(core.blocks.latest.height),
    timestamp: rfc3339Nano(core.blocks.latest.timeNs),
    delegate_tas: [],
    // The official SDK's shape (§3.3): no delegate transfer agents.
    data: { address: host.address, delegate_ta: {} },
  };
}

export async function nodeRoutes(
  app: FastifyInstance,
  opts: { core: DevnetCore; host: HostIdentity },
): Promise<void> {
  const { core, host } = opts;
  const { chain, blocks } = core;
  installQueryFault(app, core.faults, 'nodeQuery', (f) => ({
    message: `devnet fault: node query failed (${f.status})`,
  }));

  app.get('/v1/epochs/latest', async () => epochsLatestJson(core));

  const currentEpoch = () => effectiveEpochAt(chain.effectiveParams().epoch, blocks.latest.height);
  app.get('/v1/epochs/current/participants', async () => participantsJson(core, currentEpoch()));
  app.get<{ Params: { epoch: string } }>(
    '/v1/epochs/:epoch/participants',
    {
      schema: {
        params: {
          type: 'object',
          required: ['epoch'],
          properties: { epoch: { type: 'string', pattern: '^[0-9]+$' } },
        },
      },
    },
    async (request, reply) => {
      const epoch = BigInt(request.params.epoch);
      if (epoch > currentEpoch()) return reply.code(404).send({ message: `epoch ${epoch} not found` });
      return participantsJson(core, epoch);
    },
  );

  app.get('/v1/governance/models', async () => ({ models: core.governanceModels }));
  app.get('/v1/models', async () => ({
    object: 'list',
    data: chain.servedModels().map((id) => ({ id, object: 'model', owned_by: 'gonka' })),
  }));

  app.get<{ Params: { address: string } }>(
    '/v2/accounts/:address',
    {
      schema: {
        params: { type: 'object', required: ['address'], properties: { address: { type: 'string' } } },
      },
    },
    async (request, reply) => {
      const { address } = request.params;
      if (!isAddress(address)) return reply.code(400).send({ message: 'invalid address' });
      const account = chain.committed.accounts.get(address);
      if (!account) return reply.code(404).send({ message: 'account not found' });
      if (!account.pubKey)
        return reply
          .code(400)
          .send({ message: 'pubkey unavailable: the account has not signed a transaction' });
      // balance is an int64 in Go JSON: a number, written exactly from the bigint.
      return reply
        .type('application/json')
        .send(
          `{"pubkey":${JSON.stringify(toBase64(account.pubKey))},"balance":${spendableOf(chain.committed, core.faults, address)},"denom":"ngonka"}`,
        );
    },
  );

  app.get('/v1/identity', async () => identityJson(core, host));
  app.get('/v1/status', async () => ({ status: 'ok' }));
}
