// The rotation tick on the devnet (spec §3.4), driven tick by tick against real Postgres and Redis:
// target stage after rotation is switched on, bridge before the switch (waiting for a replacement to
// be routed and for in-flight requests before settling), target after the switch, fallback and
// suppression under the per-epoch-limit fault, a governance-absent model never touched, and the
// funding check. Proxies are simulated by the pool entries an owner publishes.
import { createChainClient, findEscrowSettledEvents, lookupTx, queryEscrow } from '@gonka-gateway/chain';
import { GNK, MINIMAX_MODEL, QWEN_MODEL } from '@gonka-gateway/devnet';
import { redisKeys } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import { createBusinessKey } from '../escrow/create.js';
import { settleEscrow } from '../escrow/settle.js';
import {
  adminInject,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { lostBroadcastFetch } from '../testing/lost-broadcast.js';
import { type RotationDriver, rotationDriver, rotationSettings } from '../testing/rotation-driver.js';
import { checkFunding } from './rotation-funding.js';
import { readRotationSettings } from './rotation-settings.js';
import { rotationSlotKey } from './rotation-slots.js';
import { runRotationTick } from './rotation-tick.js';

const EPOCH = 400; // blocks; PoC takes the 20 blocks before set_new_validators (= poc_start + 20)
const PRE = 100;
const AMOUNT = 5n * GNK;

describe('rotation tick', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let ctx: ControllerContext;
  let d: RotationDriver;
  beforeAll(async () => {
    h = await startControllerHarness({ epoch: { epochLength: EPOCH } });
    app = await h.build();
    ctx = h.context();
    d = rotationDriver(h, { epochLength: EPOCH, amount: AMOUNT });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const keys = () => redisKeys(h.redis.prefix);
  const escrows = async () =>
    (
      await h.sql<{ escrow_id: string; role: string; state: string }[]>`
        select escrow_id::text as escrow_id, role, state from escrows order by escrow_id`
    ).map((r) => ({ id: BigInt(r.escrow_id), role: r.role, state: r.state }));
  const debug = async () => (await adminInject(app, 'GET', '/v1/debug/rotation')).json();

  it('off: a tick touches nothing; on: the target stage creates target_count regular escrows once', async () => {
    const lastId = h.devnet.chain.lastEscrowId();
    expect((await d.tick()).ran).toBe(true);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);

    const on = await adminInject(
      app,
      'POST',
      '/v1/admin/settings',
      rotationSettings(PRE, [
        { modelId: QWEN_MODEL, privateKeyEnv: 'CREATOR_KEY', amount: AMOUNT },
        { modelId: MINIMAX_MODEL, privateKeyEnv: 'CREATOR_1_KEY', amount: AMOUNT },
      ]),
    );
    expect(on.statusCode, on.body).toBe(200);
    // Governance drops MiniMax after the setting was accepted: rotation must not spend on it.
    const governance = h.devnet.core.governanceModels;
    governance.splice(
      governance.findIndex((m) => m.id === MINIMAX_MODEL),
      1,
    );
    const minimaxCreator = h.account('creator-1').address;
    const minimaxBalance = h.devnet.chain.balanceOf(minimaxCreator);

    const epoch = d.epochNow();
    const first = await d.tick();
    expect(first.step).toEqual({ stage: 'target', epoch: BigInt(epoch), role: 'regular' });
    await d.tick(); // the same slot again: answered from its commitment, nothing sent
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    const [regular] = await escrows();
    expect(regular).toMatchObject({ role: 'regular', state: 'active' });

    const view = await debug();
    expect(view.latest[QWEN_MODEL]).toMatchObject({
      stage: 'target',
      status: 'creating', // waits until a proxy routes the new escrow
      epoch,
      role: 'regular',
      target: 1,
      existing: 1,
      created: 1,
      last_error: null,
    });
    expect(view.latest[QWEN_MODEL].events.map((e: { marker: string }) => e.marker)).toEqual(
      expect.arrayContaining(['escrow_rotation_target_started', 'escrow_rotation_created']),
    );
    expect(view.latest[MINIMAX_MODEL]).toMatchObject({ stage: 'idle', created: 0 });
    expect(view.latest[MINIMAX_MODEL].events).toEqual([
      expect.objectContaining({ marker: 'escrow_rotation_model_absent', epoch }),
    ]);
    expect(h.devnet.chain.balanceOf(minimaxCreator)).toBe(minimaxBalance);
    expect(view.funding).toEqual([
      expect.objectContaining({ private_key_env: 'CREATOR_KEY', models: [QWEN_MODEL], ok: true }),
      expect.objectContaining({ private_key_env: 'CREATOR_1_KEY', models: [MINIMAX_MODEL], ok: true }),
    ]);

    // Routed: the same tick retires (nothing to retire here) and the stage is done.
    await d.route(regular!.id);
    expect((await debug()).latest[QWEN_MODEL]).toMatchObject({ stage: 'target', status: 'done' });
  }, 60_000);

  it('bridge: a temporary escrow first; the regular one is settled only once the temp is routed and no request is in flight', async () => {
    const next = d.epochNow() + 1;
    d.moveTo(next, PRE - 10);
    const [regular] = await escrows();
    const lastId = h.devnet.chain.lastEscrowId();
    expect((await d.tick()).step).toEqual({ stage: 'bridge', epoch: BigInt(next), role: 'temp' });
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    const temp = (await escrows()).find((e) => e.role === 'temp')!;
    expect(temp).toMatchObject({ state: 'active' });
    // The temp is not routed yet: the regular escrow keeps serving.
    await d.tick();
    expect((await escrows()).find((e) => e.id === regular!.id)).toMatchObject({ state: 'active' });

    // Routed, with a request in flight on the regular escrow: the tick that sees the temp routed
    // drains the regular one at once and waits for the request before settling it.
    await h.redis.redis.set(keys().escrowInFlight(regular!.id), '1');
    await d.route(temp.id);
    expect((await escrows()).find((e) => e.id === regular!.id)).toMatchObject({ state: 'draining' });
    expect(await h.redis.redis.hget(keys().poolEscrow(regular!.id), 'status')).toBe('draining');
    expect(d.settled).toEqual([]); // waits while a request is in flight (spec §3.1)
    let view = await debug();
    expect(view.latest[QWEN_MODEL]).toMatchObject({
      stage: 'bridge',
      status: 'retiring',
      epoch: next,
      role: 'temp',
      created: 1,
      retiring: [Number(regular!.id)],
    });
    expect(view.latest[QWEN_MODEL].events[0]).toMatchObject({
      marker: 'escrow_rotation_settle_waiting',
      escrow_id: regular!.id.toString(),
    });

    await h.redis.redis.del(keys().escrowInFlight(regular!.id));
    await d.tick();
    expect(d.settled).toEqual([regular!.id]);
    expect((await queryEscrow(h.chain, regular!.id)).escrow?.settled).toBe(true);
    await d.tick();
    view = await debug();
    expect(view.latest[QWEN_MODEL]).toMatchObject({
      stage: 'bridge',
      status: 'done',
      settled: 1,
      retiring: [],
    });
    // Money: the whole deposit is accounted for (no chat ran on it: all of it back to the creator).
    const [row] = await h.sql<{ settle_tx: string }[]>`
      select tx_hash as settle_tx from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${regular!.id.toString()}`;
    const found = await lookupTx(h.chain, row!.settle_tx);
    const [event] = findEscrowSettledEvents(
      found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [],
    );
    expect(event!.totalPayout + event!.remainder).toBe(AMOUNT);
  }, 90_000);

  it('target after the switch: a new regular escrow, then the temporary one is settled', async () => {
    const epoch = d.epochNow() + 1;
    d.moveTo(epoch, -5);
    const temp = (await escrows()).find((e) => e.role === 'temp' && e.state === 'active')!;
    expect((await d.tick()).step).toEqual({ stage: 'target', epoch: BigInt(epoch), role: 'regular' });
    const regular = (await escrows()).find((e) => e.role === 'regular' && e.state === 'active')!;
    await d.route(regular.id);
    await d.tick();
    await d.tick();
    expect(d.settled.at(-1)).toBe(temp.id);
    expect((await debug()).latest[QWEN_MODEL]).toMatchObject({
      stage: 'target',
      epoch,
      status: 'done',
      created: 1,
      settled: 1,
    });
  }, 90_000);

  it('fallback and suppression: temp creation fails on chain → the regular escrow is promoted, and no second create is tried for that epoch', async () => {
    const next = d.epochNow() + 1;
    d.moveTo(next, PRE - 10);
    const regular = (await escrows()).find((e) => e.role === 'regular' && e.state === 'active')!;
    h.devnet.faults.set({ epochCapReached: true });
    const lastId = h.devnet.chain.lastEscrowId();
    const balance = h.devnet.chain.balanceOf(h.account('creator-0').address);
    await d.tick();
    const slotKey = createBusinessKey(rotationSlotKey(QWEN_MODEL, 'temp', BigInt(next), 0));
    const attempts = async () =>
      (await h.sql`select status from chain_tx_commitments where business_key = ${slotKey}`).map(
        (r) => r.status,
      );
    expect(await attempts()).toEqual(['failed']);
    // Refused at CheckTx: nothing locked, no fee taken.
    expect(h.devnet.chain.balanceOf(h.account('creator-0').address)).toBe(balance);
    await d.tick();
    await d.tick();
    expect(await attempts()).toEqual(['failed']); // suppressed: never re-sent
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    expect((await escrows()).find((e) => e.id === regular.id)).toMatchObject({
      role: 'temp',
      state: 'active',
    });

    const view = await debug();
    expect(view.latest[QWEN_MODEL]).toMatchObject({
      stage: 'bridge',
      epoch: next,
      status: 'done',
      created: 0,
      promoted: 1,
      failed: 1,
      last_error: expect.stringMatching(/temp slot 0: .*failed on chain/),
    });
    expect(view.latest[QWEN_MODEL].suppressed).toEqual([
      expect.objectContaining({ role: 'temp', epoch: next, error: expect.stringMatching(/escrows \(max/) }),
    ]);
    expect(view.latest[QWEN_MODEL].events.map((e: { marker: string }) => e.marker)).toEqual(
      expect.arrayContaining([
        'escrow_rotation_create_failed',
        'escrow_rotation_create_suppressed',
        'escrow_rotation_fallback_promoted',
      ]),
    );

    // The fault clears; after the switch the target stage creates a regular escrow and retires the
    // promoted one.
    h.devnet.faults.set({ epochCapReached: undefined });
    d.moveTo(next, -5);
    await d.tick();
    const fresh = (await escrows()).find((e) => e.role === 'regular' && e.state === 'active')!;
    expect(fresh.id).toBe(lastId + 1n);
    await d.route(fresh.id);
    await d.tick();
    await d.tick();
    expect(d.settled.at(-1)).toBe(regular.id);
    expect((await debug()).latest[QWEN_MODEL]).toMatchObject({
      stage: 'target',
      epoch: next,
      status: 'done',
      settled: 1,
    });
  }, 90_000);

  it('a lost broadcast answer leaves the slot pending; the next tick (another controller) finds that tx: one slot, one escrow', async () => {
    const next = d.epochNow() + 1;
    d.moveTo(next, PRE - 10);
    const broadcast = lostBroadcastFetch();
    const blind = h.context({
      chain: createChainClient({
        chainRest: h.devnet.urls.chainRest,
        publicApi: h.devnet.urls.node,
        fetch: broadcast.fetch,
      }),
      poll: { intervalMs: 20, timeoutMs: 300 },
    });
    const lastId = h.devnet.chain.lastEscrowId();
    await runRotationTick(blind, d.deps);
    // The tx executed on chain, but the controller cannot know: nothing registered, stage waits.
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    expect((await escrows()).some((e) => e.id === lastId + 1n)).toBe(false);
    expect((await debug()).latest[QWEN_MODEL]).toMatchObject({
      stage: 'bridge',
      epoch: next,
      status: 'creating',
      created: 0,
      last_error: expect.stringMatching(/outcome is not known yet/),
    });
    broadcast.restore();
    const other = { ...h.context(), controllerId: 'controller-second' };
    await runRotationTick(other, d.deps);
    await runRotationTick(other, d.deps);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    expect((await escrows()).find((e) => e.id === lastId + 1n)).toMatchObject({
      role: 'temp',
      state: 'active',
    });
    const slotKey = createBusinessKey(rotationSlotKey(QWEN_MODEL, 'temp', BigInt(next), 0));
    expect(await h.sql`select status from chain_tx_commitments where business_key = ${slotKey}`).toEqual([
      { status: 'included' },
    ]);
  }, 60_000);

  it("with the model's settle switch off, rotated-out escrows are finalized and left unsettled", async () => {
    const settings = (await adminInject(app, 'GET', '/v1/admin/settings')).json();
    // MiniMax left governance in the first test: the list is re-sent without it.
    const models = settings.escrow_rotation.models
      .filter((m: { model_id: string }) => m.model_id === QWEN_MODEL)
      .map((m: object) => ({ ...m, settle: false }));
    const off = await adminInject(app, 'POST', '/v1/admin/settings', { escrow_rotation: { models } });
    expect(off.statusCode, off.body).toBe(200);
    const regular = (await escrows()).find((e) => e.role === 'regular' && e.state === 'active')!;
    const temp = (await escrows()).find((e) => e.role === 'temp' && e.state === 'active')!;
    const settledBefore = d.settled.length;
    await d.route(temp.id);
    await d.tick();
    await d.tick();
    expect((await escrows()).find((e) => e.id === regular.id)).toMatchObject({ state: 'finalized' });
    expect(d.settled.length).toBe(settledBefore);
    expect((await queryEscrow(h.chain, regular.id)).escrow?.settled).toBe(false);
    expect((await debug()).latest[QWEN_MODEL]).toMatchObject({ stage: 'bridge', status: 'done', settled: 0 });
    // Settle it by hand so the devnet ends clean (and the switch goes back on).
    await settleEscrow(ctx, regular.id, 'CREATOR_KEY');
    await adminInject(app, 'POST', '/v1/admin/settings', {
      escrow_rotation: { models: models.map((m: object) => ({ ...m, settle: true })) },
    });
  }, 60_000);

  it('a target stage that creates nothing keeps the temporaries; the next bridge settles them before their settle window closes', async () => {
    const epoch = d.epochNow() + 1;
    const temp = (await escrows()).find((e) => e.role === 'temp' && e.state === 'active')!;
    h.devnet.faults.set({ epochCapReached: true });
    d.moveTo(epoch, -5);
    await d.tick();
    await d.tick();
    let view = await debug();
    expect(view.latest[QWEN_MODEL]).toMatchObject({
      stage: 'target',
      epoch,
      status: 'done',
      created: 0,
      failed: 1,
    });
    expect(view.latest[QWEN_MODEL].events.map((e: { marker: string }) => e.marker)).toContain(
      'escrow_rotation_no_replacement',
    );
    expect((await escrows()).find((e) => e.id === temp.id)).toMatchObject({ state: 'active' }); // still serving

    h.devnet.faults.set({ epochCapReached: undefined });
    d.moveTo(epoch + 1, PRE - 10);
    // The temp was created in epoch − 1: it settles in this epoch or never (settle rule 9), so it is
    // retired at once, even before the new temporary escrow is routed.
    await d.tick();
    await d.tick();
    expect(d.settled.at(-1)).toBe(temp.id);
    view = await debug();
    expect(view.latest[QWEN_MODEL]).toMatchObject({
      stage: 'bridge',
      epoch: epoch + 1,
      status: 'creating',
      created: 1,
    });
    expect(view.latest[QWEN_MODEL].events.map((e: { marker: string }) => e.marker)).toEqual(
      expect.arrayContaining(['escrow_rotation_window_retire', 'escrow_rotation_settled']),
    );
  }, 60_000);

  it('two controllers ticking at once: one runs, the other steps aside', async () => {
    const other = { ...h.context(), controllerId: 'controller-second' };
    const results = await Promise.all([d.tick(), runRotationTick(other, d.deps)]);
    expect(results.map((r) => r.ran).sort()).toEqual([false, true]);
  });

  it('funding check: a creator below (temp_count + target_count) × amount plus gas is reported', async () => {
    const settings = (await readRotationSettings(h.sql))!;
    const qwen = settings.models.find((m) => m.modelId === QWEN_MODEL)!;
    const [ok] = await checkFunding(ctx, [qwen]);
    expect(ok!.ok).toBe(true);
    expect(ok!.required).toBeGreaterThan(2n * AMOUNT); // plus the create fees
    const [short] = await checkFunding(ctx, [{ ...qwen, tempCount: 100, targetCount: 100 }]);
    expect(short).toMatchObject({ ok: false, models: [QWEN_MODEL] });
    expect(short!.required).toBeGreaterThan(short!.spendable);

    // A tick warns (once per epoch) when the creator cannot fund a transition.
    h.devnet.faults.set({ insufficientFunds: [h.account('creator-0').address] });
    await d.tick();
    await d.tick();
    h.devnet.faults.set({ insufficientFunds: undefined });
    const view = await debug();
    const warned = view.latest[QWEN_MODEL].events.filter(
      (e: { marker: string }) => e.marker === 'escrow_rotation_underfunded',
    );
    expect(warned).toEqual([
      expect.objectContaining({
        creator: h.account('creator-0').address,
        spendable: '0',
        epoch: d.epochNow(),
      }),
    ]);
  });

  it("a chain error stops one model's pass: recorded once in /v1/debug/rotation, the next tick carries on", async () => {
    h.devnet.faults.set({ chainQuery: { status: 503, match: 'node_info' } });
    await d.tick();
    await d.tick();
    h.devnet.faults.set({ chainQuery: undefined });
    const errors = (await debug()).latest[QWEN_MODEL].events.filter(
      (e: { marker: string }) => e.marker === 'escrow_rotation_tick_error',
    );
    expect(errors).toEqual([expect.objectContaining({ error: expect.stringMatching(/503|unavailable/i) })]);
    expect((await d.tick()).ran).toBe(true);
  });
});
