// The balance check on the devnet: marking with rotation off, exactly one replacement with rotation on,
// and holds while in-flight reservations may bring a low balance back or while the escrow's
// max_nonce is unknown. The devnet's max_nonce is 25,000: the routing stop is 25,000 − 17 − 200.
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { nonceRoutingStop, redisKeys } from '@gonka-gateway/shared';
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
    h = await startControllerHarness({
      params: (p) => {
        p.devshardEscrow.maxNonce = 25_000n;
      },
    });
    app = await h.build();
    ctx = h.context();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    adminInject(app, method, url, payload);
  const createRegistered = () => createRegisteredEscrow(app, h.chainId);
  /**
   * The pool entry an owner publishes; with `ceiling` its session knows the escrow's max_nonce (the
   * record's) and publishes it with its routing stop, without it the stop of an unknown ceiling.
   */
  const publish = (
    id: bigint,
    balance: bigint,
    nonce: bigint,
    ceiling?: { maxNonce: bigint; stop: bigint },
  ) =>
    h.redis.redis.hset(redisKeys(h.redis.prefix).poolEscrow(id), {
      nonce_ceiling: ceiling?.maxNonce.toString() ?? '',
      routing_stop: (ceiling?.stop ?? 19_800n).toString(),
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
  /** The escrow's max_nonce as registered (the chain row's, in the session record) and its stop. */
  const ceilingOf = async (id: bigint) => {
    const { record } = (await ctx.store.load(id.toString()))!;
    const maxNonce = record.chainParams.maxNonce!;
    return { maxNonce, stop: nonceRoutingStop(maxNonce, record.escrow.slots.length) };
  };

  it('marks a low balance depleted and a nonce at the routing stop nonce_limited; with rotation off nothing is created', async () => {
    const low = await createRegistered();
    const old = await createRegistered();
    const fine = await createRegistered();
    const ceiling = await ceilingOf(old);
    expect(ceiling.maxNonce).toBe(25_000n);
    const { record } = (await ctx.store.load(old.toString()))!;
    expect(ceiling.stop).toBe(25_000n - BigInt(record.escrow.slots.length + 1) - 200n);
    await publish(low, 999_999n, 10n, ceiling);
    await publish(old, 4n * GNK, ceiling.stop, ceiling);
    await publish(fine, 1_000_000n, ceiling.stop - 1n, await ceilingOf(fine));
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

  it('holds a low balance its in-flight reservations may bring back, then releases or retires it', async () => {
    // Rotation is on for the model (previous test): a depleted escrow would be replaced and settled.
    const busy = await createRegistered();
    const settles: bigint[] = [];
    const deps = settleRecorder(settles);
    /** The owner's numbers, the status left as the check set it. */
    const progress = (balance: bigint, reserved: bigint) =>
      h.redis.redis.hset(redisKeys(h.redis.prefix).poolEscrow(busy), {
        balance_estimate: balance.toString(),
        reserved: reserved.toString(),
      });
    const findingOf = async () => (await checkDepletion(ctx, deps)).find((f) => f.escrowId === busy);

    // 400,000 now, 5,000,000 out in reservations: held, not replaced, not settled.
    await publish(busy, 400_000n, 10n);
    await progress(400_000n, 5_000_000n);
    expect(await findingOf()).toEqual({ escrowId: busy, status: 'held' });
    expect(await findingOf()).toEqual({ escrowId: busy, status: 'held' });
    expect(await poolStatus(busy)).toBe('held');
    expect(settles).not.toContain(busy);
    const view = await call('GET', `/v1/admin/devshards/${busy}`);
    expect(view.json().pool).toMatchObject({
      status: 'held',
      balance_estimate: '400000',
      reserved: '5000000',
    });

    // The reservations returned and the balance is above the minimum: released to routing.
    await progress(3_000_000n, 0n);
    expect(await findingOf()).toEqual({ escrowId: busy, status: 'released' });
    expect(await poolStatus(busy)).toBe('active');
    expect(await findingOf()).toBeUndefined();

    // Held again; this time the reservations were spent (the balance stays below): retired.
    await progress(400_000n, 5_000_000n);
    expect(await findingOf()).toEqual({ escrowId: busy, status: 'held' });
    await progress(900_000n, 0n);
    const retired = await findingOf();
    expect(retired).toEqual({ escrowId: busy, status: 'depleted', replacement: expect.any(Number) });
    expect(await poolStatus(busy)).toBe('depleted');
    expect(settles).toContain(busy);
  });
  it('holds an escrow at 19,800 while its max_nonce is unknown, never replacing it; routes it again once known', async () => {
    // Rotation is on for the model (second test): a nonce_limited escrow would be replaced.
    const unread = await createRegistered();
    const settles: bigint[] = [];
    const deps = settleRecorder(settles);
    const lastId = h.devnet.chain.lastEscrowId();
    const findingOf = async () => (await checkDepletion(ctx, deps)).find((f) => f.escrowId === unread);
    await publish(unread, 4n * GNK, 19_800n);
    expect(await findingOf()).toEqual({ escrowId: unread, status: 'held' });
    expect(await findingOf()).toEqual({ escrowId: unread, status: 'held' });
    expect(await poolStatus(unread)).toBe('held');
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    expect(settles).not.toContain(unread);
    const ceiling = await ceilingOf(unread);
    expect((await call('GET', `/v1/admin/devshards/${unread}`)).json().pool).toMatchObject({
      status: 'held',
      nonce_ceiling: null,
      routing_stop: '19800',
    });

    // The owner read the chain: the ceiling and its stop are published, the hold is released.
    await h.redis.redis.hset(redisKeys(h.redis.prefix).poolEscrow(unread), {
      nonce_ceiling: ceiling.maxNonce.toString(),
      routing_stop: ceiling.stop.toString(),
    });
    expect(await findingOf()).toEqual({ escrowId: unread, status: 'released' });
    expect(await poolStatus(unread)).toBe('active');
    expect((await call('GET', `/v1/admin/devshards/${unread}`)).json().pool).toMatchObject({
      nonce_ceiling: '25000',
      routing_stop: ceiling.stop.toString(),
    });

    // At the chain-derived stop it is retired like any nonce_limited escrow.
    await h.redis.redis.hset(redisKeys(h.redis.prefix).poolEscrow(unread), {
      nonce: ceiling.stop.toString(),
    });
    expect(await findingOf()).toEqual({
      escrowId: unread,
      status: 'nonce_limited',
      replacement: expect.any(Number),
    });
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    expect(settles).toContain(unread);
  });
});
