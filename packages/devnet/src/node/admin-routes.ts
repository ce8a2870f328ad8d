// Devnet control over HTTP, for the demo and for processes that cannot reach the embedding API:
// faults, block production, time, confirmation PoC, hosts down/up. Unauthenticated: the devnet
// binds to 127.0.0.1 and holds only public dev keys.
import type { FastifyInstance } from 'fastify';
import type { DevnetCore } from '../core.js';
import type { FaultSettings } from '../faults.js';
import { hostFaultsSchema } from '../host/faults.js';
import { CONFIRMATION_POC_PHASES, type ConfirmationPocPhase } from './epoch-schedule.js';

const queryFault = {
  type: ['object', 'null'],
  properties: {
    status: { type: 'integer', minimum: 100, maximum: 599 },
    delayMs: { type: 'integer', minimum: 0 },
    match: { type: 'string' },
    remaining: { type: 'integer', minimum: 1 },
  },
  additionalProperties: false,
} as const;
const addressList = { type: ['array', 'null'], items: { type: 'string' } } as const;

export const faultSettingsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    chainQuery: queryFault,
    nodeQuery: queryFault,
    broadcast: {
      type: ['object', 'null'],
      required: ['mode'],
      properties: {
        mode: { enum: ['never-included', 'never-indexed', 'drop-connection', 'no-response'] },
        remaining: { type: 'integer', minimum: 1 },
      },
      additionalProperties: false,
    },
    insufficientFunds: addressList,
    removedCreators: addressList,
    epochCapReached: { type: ['boolean', 'null'] },
    modelsMissing: addressList,
    excludedParticipants: addressList,
    blocksPaused: { type: ['boolean', 'null'] },
    devshardHosts: hostFaultsSchema,
  },
} as const;

export async function adminRoutes(app: FastifyInstance, opts: { core: DevnetCore }): Promise<void> {
  const { core } = opts;
  const { faults, blocks } = core;
  const height = () => ({ height: blocks.latest.height.toString() });

  app.get('/devnet/admin/faults', async () => faults.current());
  app.post<{ Body: FaultSettings }>(
    '/devnet/admin/faults',
    { schema: { body: faultSettingsSchema } },
    async (request) => faults.set(request.body),
  );
  app.delete('/devnet/admin/faults', async () => {
    faults.clear();
    return faults.current();
  });

  app.post<{ Body: { count?: number } }>(
    '/devnet/admin/blocks/step',
    {
      schema: {
        body: {
          type: ['object', 'null'],
          properties: { count: { type: 'integer', minimum: 1, maximum: 100_000 } },
        },
      },
    },
    async (request) => {
      blocks.step(request.body?.count ?? 1);
      return height();
    },
  );
  app.post('/devnet/admin/blocks/pause', async () => {
    faults.set({ blocksPaused: true });
    return height();
  });
  app.post('/devnet/admin/blocks/resume', async () => {
    faults.set({ blocksPaused: undefined });
    return height();
  });
  app.post<{ Body: { ms: number } }>(
    '/devnet/admin/blocks/advance-time',
    {
      schema: {
        body: { type: 'object', required: ['ms'], properties: { ms: { type: 'integer', minimum: 0 } } },
      },
    },
    async (request) => {
      blocks.advanceTime(request.body.ms);
      return height();
    },
  );

  app.post<{ Body: { phase: ConfirmationPocPhase | null } }>(
    '/devnet/admin/confirmation-poc',
    {
      schema: {
        body: {
          type: 'object',
          required: ['phase'],
          properties: { phase: { anyOf: [{ enum: [...CONFIRMATION_POC_PHASES] }, { type: 'null' }] } },
        },
      },
    },
    async (request) => {
      const { phase } = request.body;
      core.confirmationPoc = phase === null ? null : { phase, triggerHeight: blocks.latest.height };
      return { phase };
    },
  );

  app.post<{ Params: { address: string; action: 'stop' | 'start' } }>(
    '/devnet/admin/hosts/:address/:action',
    {
      schema: {
        params: {
          type: 'object',
          required: ['address', 'action'],
          properties: { address: { type: 'string' }, action: { enum: ['stop', 'start'] } },
        },
      },
    },
    async (request, reply) => {
      const { address, action } = request.params;
      if (!core.hosts.some((h) => h.address === address))
        return reply.code(404).send({ message: 'unknown host' });
      await core.setHostRunning(address, action === 'start');
      return { address, running: action === 'start' };
    },
  );
}
