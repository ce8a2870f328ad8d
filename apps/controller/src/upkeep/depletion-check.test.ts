// The balance check on the devnet: marking with rotation off, exactly one replacement with rotation on.
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { redisKeys } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import {
  adminInject,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { checkDepletion } from './depletion-check.js';

describe('depletion check', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let ctx: ControllerContext;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build();
    ctx = h.context();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    adminInject(app, method, url, payload);
  const createRegistered = () => createRegisteredEscrow(app, h.chainId);
  /** The pool entry an owner publishes. */
  const publish = (id: bigint, balance: bigint, nonce: bigint) =>
    h.redis.redis.hset(redisKeys(h.redis.prefix).poolEscrow(id), {
      escrow_id: id.toString(),
      model_id: QWEN_MODEL,
      status: 'active',
      capacity_weight: '1',
      balance_estimate: balance.toString(),
      nonce: nonce.toString(),
      owner: 'replica-a',
      updated_at_ms: '1',
    });
  const settleRecorder = (into: bigint[]) => ({
    enqueueSettle: async (id: bigint) => {
      into.push(id);
      return `settle-${id}`;
    },
  });
  const poolStatus = (id: bigint) => h.redis.redis.hget(redisKeys(h.redis.prefix).poolEscrow(id), 'status');

  it('marks a low balance depleted and a nonce at the routing stop nonce_limited; with rotation off nothing is created', async () => {
    const low = await createRegistered();
    const old = await createRegistered();
    const fine = await createRegistered();
    await publish(low, 999_999n, 10n);
    await publish(old, 4n * GNK, 19_800n);
    await publish(fine, 1_000_000n, 19_799n);
    const lastId = h.devnet.chain.lastEscrowId();
    const settles: bigint[] = [];
    const findings = await checkDepletion(ctx, settleRecorder(settles));
    expect(findings).toEqual([
      { escrowId: low, status: 'depleted' },
      { escrowId: old, status: 'nonce_limited' },
    ]);
    expect([await poolStatus(low), await poolStatus(old), await poolStatus(fine)]).toEqual([
      'depleted',
      'nonce_limited',
      'active',
    ]);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    expect(settles).toEqual([]);
  });

  it('with rotation on for the model: exactly one replacement per depleted escrow, however often the check runs', async () => {
    const enable = await call('POST', '/v1/admin/settings', {
      escrow_rotation: {
        enabled: true,
        models: [
          {
            model_id: QWEN_MODEL,
            temp_count: 0,
            target_count: 1,
            amount: (5n * GNK).toString(),
            private_key_env: 'CREATOR_KEY',
          },
        ],
      },
    });
    expect(enable.statusCode).toBe(200);
    const lastId = h.devnet.chain.lastEscrowId();
    const settles: bigint[] = [];
    const deps = settleRecorder(settles);
    const [first, second] = await Promise.all([checkDepletion(ctx, deps), checkDepletion(ctx, deps)]);
    const third = await checkDepletion(ctx, deps);
    // The two marked escrows of the first test, each replaced once.
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 2n);
    const replacements = first!.map((f) => f.replacement);
    expect(second!.map((f) => f.replacement)).toEqual(replacements);
    expect(third.map((f) => f.replacement)).toEqual(replacements);
    for (const r of replacements) {
      expect(await h.sql`select state, active from escrows where escrow_id = ${String(r)}`).toEqual([
        { state: 'active', active: true },
      ]);
    }
    expect(new Set(settles).size).toBe(2);

    // A replacement that cannot be created (the creator's funds read as locked) is reported once,
    // in the log and in /v1/debug/rotation.
    const poor = await createRegistered();
    await publish(poor, 10n, 1n);
    h.devnet.faults.set({ insufficientFunds: [h.account('creator-0').address] });
    await checkDepletion(ctx, deps);
    await checkDepletion(ctx, deps);
    h.devnet.faults.set({ insufficientFunds: undefined });
    const failures = await h.sql`
      select detail->>'escrow_id' as escrow_id from rotation_events where marker = 'escrow_depletion_replacement_failed'`;
    expect(failures).toEqual([{ escrow_id: poor.toString() }]);

    // /v1/debug/rotation shows the setting and where the chain is.
    const debug = await call('GET', '/v1/debug/rotation');
    expect(debug.statusCode).toBe(200);
    expect(debug.json()).toMatchObject({
      enabled: true,
      chain: {
        block_height: expect.any(Number),
        epoch_index: expect.any(Number),
        phase: expect.any(String),
        blocks_to_epoch_switch: expect.any(Number),
        blocks_until_next_rotation: expect.any(Number),
      },
      settings: { enabled: true, pre_poc_blocks: 300 },
      latest: { [QWEN_MODEL]: { stage: 'idle', created: 0, last_error: null } },
    });
    expect(debug.json().latest[QWEN_MODEL].events).toEqual([
      expect.objectContaining({ marker: 'escrow_depletion_replacement_failed', escrow_id: poor.toString() }),
    ]);
    expect((await app.inject({ method: 'GET', url: '/v1/debug/rotation' })).statusCode).toBe(401);
  });
});
