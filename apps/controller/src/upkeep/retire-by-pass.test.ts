// Settle-window safety on the devnet (upkeep/retire-by.ts, retire-by-pass.ts), driven tick by tick
// against real Postgres, Redis and the devnet's hosts: a regular escrow whose retirement slipped a
// stage (no bridge ran before the switch) and which carries a stalled inference is left alone until
// its retire-by height, then drained, finalized once the execution timeout let the hosts time the
// inference out, and settled before its window closes — deposit = payouts + fees + refund. A manual
// escrow is only reported; once its window closed unsettled it is listed with its amount.
import { findEscrowSettledEvents, lookupTx, queryEscrow } from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { InferenceStatus } from '@gonka-gateway/devshard';
import { HttpHostTransport, UserSession } from '@gonka-gateway/devshard/session';
import { EscrowLease } from '@gonka-gateway/escrow-runtime';
import { createMetricsRegistry, readSettleWindowSummary } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleBlockTime } from '../chain/block-time.js';
import type { ControllerContext } from '../controller-context.js';
import { createControllerMetrics } from '../controller-metrics.js';
import {
  adminInject,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { devnetSessionClock } from '../testing/devnet-clock.js';
import { type RotationDriver, rotationDriver, rotationSettings } from '../testing/rotation-driver.js';

const EPOCH = 400; // blocks of 50 ms: 20 s epochs
const PRE = 100;
const EXECUTION_TIMEOUT_S = 3;
const TIMING = { tickMs: 1_000, marginMs: 4_000 };
// 3 s + 5 s skew + 4 s + 1 s = 13 s = 260 blocks at 50 ms: inside an epoch, so not capped.
const RESERVE_BLOCKS = 260n;
const AMOUNT = 5n * GNK;

describe('settle-window safety', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let ctx: ControllerContext;
  let d: RotationDriver;
  const metrics = createControllerMetrics(createMetricsRegistry({ app: 'controller', version: 'test' }));
  beforeAll(async () => {
    h = await startControllerHarness({ epoch: { epochLength: EPOCH } });
    h.devnet.chain.updateParams((p) => {
      p.devshardEscrow.executionTimeout = BigInt(EXECUTION_TIMEOUT_S);
    });
    app = await h.build({
      config: {
        GATEWAY_ROTATION_TICK_MS: String(TIMING.tickMs),
        GATEWAY_SETTLE_MARGIN_MS: String(TIMING.marginMs),
      },
    });
    ctx = { ...h.context(), settleTiming: TIMING, metrics };
    d = rotationDriver(h, { epochLength: EPOCH, amount: AMOUNT, context: ctx });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const height = () => h.devnet.blocks.height;
  const stepTo = (target: bigint) => {
    if (target > height()) h.devnet.blocks.step(Number(target - height()));
  };
  const stateOf = async (id: bigint) =>
    (await h.sql<{ state: string }[]>`select state from escrows where escrow_id = ${id.toString()}`)[0]
      ?.state;
  const debug = async () => (await adminInject(app, 'GET', '/v1/debug/rotation')).json();
  const windowOf = async (id: bigint) =>
    (await debug()).settle_window.escrows.find((e: { escrow_id: number }) => e.escrow_id === Number(id));
  const pastRetireByGauge = async () => (await metrics.escrowsPastRetireBy.get()).values[0]?.value;

  /** An owner (a proxy replica) serves on `id` until it has one inference confirmed and never finished. */
  const stallOneInference = async (id: bigint) => {
    const lease = await EscrowLease.acquire({
      redis: h.redis.redis,
      keys: ctx.keys,
      escrowId: id,
      replicaId: 'replica-a',
      ttlMs: 10_000,
    });
    if (!lease) throw new Error('escrow already leased');
    await ctx.hosts.refresh();
    const signer = h.account('creator-0').key;
    const clock = devnetSessionClock(h.devnet);
    const session = await UserSession.open({
      store: ctx.store,
      escrowId: id,
      signer,
      transport: new HttpHostTransport({ signer, nowSeconds: clock.nowSeconds }),
      resolveHost: ctx.hosts.resolve,
      writeGuard: lease.guard,
      clock,
    });
    await lease.setToken(session.fencingToken);
    const slots = session.state.group.slots;
    const count = (a: string) => slots.filter((s) => s === a).length;
    // The host with the fewest slots: the others outvote it when they time its inference out (§5.4).
    const staller = [...new Set(slots)].sort((a, b) => count(a) - count(b))[0]!;
    const infer = (i: number) => {
      const body = new TextEncoder().encode(
        JSON.stringify({
          model: QWEN_MODEL,
          messages: [{ role: 'user', content: `q ${i}` }],
          max_tokens: 64,
        }),
      );
      return session.infer({ body, model: QWEN_MODEL, inputLength: BigInt(body.length), maxTokens: 64n });
    };
    let i = 0;
    while (slots[Number((session.latestNonce + 1n) % BigInt(slots.length))] !== staller) await infer(i++);
    // The executor answers its receipt, then an error event: no Finish is ever produced.
    await h.devnet.devshardHosts.setFault(staller, { mode: 'error-event', remaining: 1 });
    const stalled = await infer(i++);
    await session.flush(); // the Confirm: the inference is Started, its execution clock runs
    expect(session.state.inferences.get(stalled.nonce)?.status).toBe(InferenceStatus.Started);
    // The owner drains and hands the escrow back (the stalled request has ended for its client).
    await session.close();
    await lease.release();
  };

  it('a regular escrow whose retirement slipped a stage is retired at its retire-by height and settles in its window, stalled inference and all', async () => {
    // The chain-phase job's samples (chain/block-time.ts): 50 ms a block.
    await sampleBlockTime(ctx, 1_000n, 10_000_000);
    await sampleBlockTime(ctx, 1_200n, 10_010_000);
    const on = await adminInject(
      app,
      'POST',
      '/v1/admin/settings',
      rotationSettings(PRE, [{ modelId: QWEN_MODEL, privateKeyEnv: 'CREATOR_KEY', amount: AMOUNT }]),
    );
    expect(on.statusCode, on.body).toBe(200);
    const manual = await createRegisteredEscrow(app, h.chainId);

    const epoch = d.epochNow();
    await d.tick(); // target stage: the regular escrow of this epoch
    const [row] = await h.sql<
      { escrow_id: string }[]
    >`select escrow_id::text from escrows where role = 'regular'`;
    const regular = BigInt(row!.escrow_id);
    await d.route(regular);
    await stallOneInference(regular);

    const w = await windowOf(regular);
    expect(w).toMatchObject({ epoch, execution_timeout_s: EXECUTION_TIMEOUT_S, reserve_capped: false });
    const closesAt = BigInt(w.window_closes_at);
    const retireBy = BigInt(w.retire_by_height);
    expect(closesAt - retireBy).toBe(RESERVE_BLOCKS);
    expect(closesAt).toBe(BigInt((epoch + 2) * EPOCH + 20)); // the switch into epoch + 2

    // The bridge into epoch + 1 never ran (no tick in it): after the switch the target stage creates
    // its escrow and leaves the old regular one serving. Short of its retire-by height nothing happens.
    stepTo(retireBy - 100n);
    await d.tick();
    expect(await stateOf(regular)).toBe('active');
    expect(await pastRetireByGauge()).toBe(0);

    stepTo(retireBy);
    await d.tick();
    expect(await stateOf(regular)).not.toBe('active');
    expect(await pastRetireByGauge()).toBeGreaterThanOrEqual(1);
    const events = (await debug()).latest[QWEN_MODEL].events.map(
      (e: { marker: string; escrow_id?: string }) => [e.marker, e.escrow_id],
    );
    expect(events).toContainEqual(['escrow_past_retire_by', regular.toString()]);
    expect(events).toContainEqual(['escrow_past_retire_by', manual.toString()]); // reported only
    expect(await stateOf(manual)).toBe('active');

    // The finalize waits out the stalled inference's execution timeout (+ skew): the chain moves on
    // meanwhile, a block per 50 ms of it.
    const waitS = EXECUTION_TIMEOUT_S + 6;
    h.devnet.blocks.advanceTime(waitS * 1_000);
    h.devnet.blocks.step(waitS * 20 - 1);
    expect(height()).toBeLessThan(closesAt);
    while ((await stateOf(regular)) !== 'settled') {
      expect(height()).toBeLessThan(closesAt);
      await d.tick();
    }
    expect((await queryEscrow(h.chain, regular)).escrow?.settled).toBe(true);
    const [commitment] = await h.sql<{ tx_hash: string }[]>`
      select tx_hash from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${regular.toString()}`;
    const found = await lookupTx(h.chain, commitment!.tx_hash);
    if (found.kind !== 'found' || found.outcome.status !== 'included') throw new Error('settle not included');
    expect(found.outcome.height).toBeLessThan(closesAt);
    const [settled] = findEscrowSettledEvents(found.outcome.events);
    const doc = JSON.parse((await adminInject(app, 'POST', `/devshard/${regular}/v1/finalize`)).body);
    const costs = doc.host_stats.reduce(
      (sum: bigint, x: { cost: string | number }) => sum + BigInt(x.cost),
      0n,
    );
    expect(settled!.totalPayout).toBe(costs + BigInt(doc.fees));
    expect(settled!.totalPayout + settled!.remainder).toBe(AMOUNT);
    // The stalled inference was timed out (cost 0), its executor's slot counted a miss.
    expect(
      doc.host_stats.reduce((n: number, x: { missed: number }) => n + Number(x.missed), 0),
    ).toBeGreaterThan(0);
  }, 60_000);

  it('a window that closed unsettled is listed with its amount (debug, and the summary /v1/status shows)', async () => {
    const [row] = await h.sql<{ escrow_id: string; epoch_index: string }[]>`
      select escrow_id::text, epoch_index::text from escrows where role = 'manual'`;
    const manual = BigInt(row!.escrow_id);
    const epoch = Number(row!.epoch_index);
    stepTo(BigInt((epoch + 2) * EPOCH + 25)); // past the switch into its epoch + 2
    await d.tick();
    const view = (await debug()).settle_window;
    expect(view.closed_unsettled).toEqual([
      { escrow_id: Number(manual), model_id: QWEN_MODEL, epoch, state: 'active', amount: AMOUNT.toString() },
    ]);
    expect(view.closed_unsettled_amount).toBe(AMOUNT.toString());
    const summary = await readSettleWindowSummary(h.redis.redis, ctx.keys);
    expect(summary).toMatchObject({
      escrows: [{ escrow_id: manual.toString(), amount: AMOUNT.toString(), state: 'active' }],
      total_amount: AMOUNT.toString(),
    });
    const markers = (await debug()).latest[QWEN_MODEL].events.map((e: { marker: string }) => e.marker);
    expect(markers).toContain('escrow_settle_window_closed_unsettled');
  }, 30_000);
});
