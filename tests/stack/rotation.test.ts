// Automatic rotation on a fast epoch schedule with the whole stack as OS processes (spec §3.4):
// switched on through the admin settings of a running controller, it goes through bridge and target
// stages across two epoch switches while the official openai client chats through both proxies
// without one failed request; then the per-epoch-limit fault makes the next bridge's temporary
// create fail on chain → fallback promotion and suppression, visible in /v1/debug/rotation; every
// escrow rotation settled accounts for its deposit to the ngonka.
import { findEscrowSettledEvents, lookupTx } from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { redisKeys } from '@gonka-gateway/shared';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, type ChatTally, chatThrough, type Stack, startStack, USER_KEY } from './stack.js';

const AMOUNT = 5n * GNK;
// 240 blocks of 50 ms: a 12 s epoch whose PoC takes the 20 blocks before set_new_validators.
const EPOCH_BLOCKS = 240;
const PRE_POC_BLOCKS = 100;

interface StageView {
  stage: string;
  status: string | null;
  epoch: number | null;
  created: number;
  promoted: number;
  settled: number;
  failed: number;
  retiring: number[];
  suppressed: { role: string; epoch: number }[];
  events: { marker: string; epoch: number | null }[];
}

const openai = (url: string) =>
  new OpenAI({ apiKey: USER_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: 30_000 });

describe('rotation across epoch switches with chat running', () => {
  let s: Stack;
  let proxy: string;
  const tally: ChatTally = { served: 0, failures: [] };
  let chatting = false;
  let traffic: Promise<void>[] = [];

  beforeAll(async () => {
    s = await startStack({
      epoch: { epochLength: EPOCH_BLOCKS },
      env: { GATEWAY_ROTATION_TICK_MS: '500' },
    });
    proxy = s.proxyUrls[0];
  }, 120_000);
  afterAll(async () => {
    chatting = false;
    await Promise.allSettled(traffic);
    await s?.close();
  }, 60_000);

  const admin = async (method: string, path: string, body?: object) => {
    const res = await fetch(`${proxy}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
  };
  const rotation = async (): Promise<StageView> =>
    (await admin('GET', '/v1/debug/rotation')).json.latest[QWEN_MODEL];
  const stageRows = () =>
    s.sql<{ epoch: string; stage: string; status: string }[]>`
      select epoch::text as epoch, stage, status from rotation_stages where model_id = ${QWEN_MODEL}`;
  /** One stage row's counts (the debug document shows only the newest stage, which moves on). */
  const stageRow = async (stage: string, epoch: number) =>
    (
      await s.sql<{ status: string; created: number; promoted: number; settled: number; failed: number }[]>`
        select status, created, promoted, settled, failed from rotation_stages
         where model_id = ${QWEN_MODEL} and stage = ${stage} and epoch = ${epoch}`
    )[0];
  const isDone = async (stage: string, epoch: number) =>
    (await stageRows()).some((r) => r.stage === stage && Number(r.epoch) === epoch && r.status === 'done');
  const epochNow = () => Number(s.devnet.epochs.current().effective);

  it('switched on at runtime, bridge and target stages follow two epoch switches with no failed chat request', async () => {
    const enable = () =>
      admin('POST', '/v1/admin/settings', {
        model_limits: [{ model_id: QWEN_MODEL, access_mode: 'api_key' }],
        escrow_rotation: {
          enabled: true,
          pre_poc_blocks: PRE_POC_BLOCKS,
          models: [
            {
              model_id: QWEN_MODEL,
              temp_count: 1,
              target_count: 1,
              amount: AMOUNT.toString(),
              private_key_env: 'CREATOR_KEY',
            },
          ],
        },
      });
    // A 5xx here is a transient read of the node during validation (seen once under load): the same
    // patch is sent again; the processes' output is attached if it keeps failing.
    let on = await enable();
    for (let i = 0; i < 3 && on.status >= 500; i++) on = await enable();
    expect(on.status, `${on.text}\n${s.processes.map((p) => p.output().slice(-2_000)).join('\n---\n')}`).toBe(
      200,
    );
    // The first target stage (this epoch, or the next one if the switch was near) gets a regular
    // escrow routed by a proxy.
    let first = -1;
    await expect
      .poll(
        async () => {
          const done = (await stageRows()).filter((r) => r.stage === 'target' && r.status === 'done');
          first = done.length > 0 ? Number(done[0]!.epoch) : -1;
          return first >= 0;
        },
        { timeout: 40_000, interval: 250 },
      )
      .toBe(true);

    // Both proxies have taken the settings and the first escrow into their pool snapshots.
    for (const url of s.proxyUrls) {
      await expect
        .poll(
          () =>
            openai(url)
              .chat.completions.create({
                model: QWEN_MODEL,
                messages: [{ role: 'user', content: 'ready?' }],
                max_tokens: 4,
              })
              .then(() => true)
              .catch(() => false),
          { timeout: 15_000, interval: 200 },
        )
        .toBe(true);
    }
    chatting = true;
    traffic = s.proxyUrls.flatMap((url, i) =>
      [2 * i, 2 * i + 1].map((n) =>
        chatThrough(
          s,
          url,
          { tag: `rotation ${n}`, maxTokens: 8, pauseMs: 50, timeoutMs: 30000, running: () => chatting },
          tally,
        ),
      ),
    );
    for (const epoch of [first + 1, first + 2]) {
      await expect.poll(() => isDone('bridge', epoch), { timeout: 40_000, interval: 250 }).toBe(true);
      await expect.poll(() => isDone('target', epoch), { timeout: 40_000, interval: 250 }).toBe(true);
      expect(epochNow()).toBeGreaterThanOrEqual(epoch);
    }
    chatting = false;
    await Promise.all(traffic);
    expect(tally.failures).toEqual([]);
    expect(tally.served).toBeGreaterThan(20);

    for (const epoch of [first + 1, first + 2]) {
      expect(await stageRow('bridge', epoch)).toMatchObject({
        status: 'done',
        created: 1,
        settled: 1,
        failed: 0,
      });
      expect(await stageRow('target', epoch)).toMatchObject({
        status: 'done',
        created: 1,
        settled: 1,
        failed: 0,
      });
    }
    const view = await rotation();
    expect(['bridge', 'target']).toContain(view.stage);
    const markers = new Set(view.events.map((e) => e.marker));
    for (const m of [
      'escrow_rotation_bridge_started',
      'escrow_rotation_target_started',
      'escrow_rotation_settled',
    ])
      expect(markers).toContain(m);
    // The controller publishes the chain phase for the proxies.
    const phase = await s.redis.redis.hgetall(redisKeys(s.redis.prefix).chainPhase);
    expect(Number(phase.epoch)).toBeGreaterThanOrEqual(first + 2);
    expect(phase.phase).toEqual(expect.any(String));
    expect(['0', '1']).toContain(phase.poc_active);
  }, 150_000);

  it('the per-epoch limit fails the next temporary create on chain: fallback promotes the regular escrow, the create is suppressed', async () => {
    let next = epochNow() + 1;
    const bridgeOpened = async (epoch: number) =>
      (await stageRows()).some((r) => r.stage === 'bridge' && Number(r.epoch) === epoch);
    s.devnet.faults.set({ epochCapReached: true });
    if (await bridgeOpened(next)) {
      // A slow machine: the bridge into `next` ran before the fault; take the following one.
      s.devnet.faults.set({ epochCapReached: undefined });
      await expect.poll(() => isDone('target', next), { timeout: 40_000, interval: 250 }).toBe(true);
      next += 1;
      s.devnet.faults.set({ epochCapReached: true });
    }
    await expect.poll(() => isDone('bridge', next), { timeout: 40_000, interval: 250 }).toBe(true);
    expect(await stageRow('bridge', next)).toMatchObject({ created: 0, promoted: 1, failed: 1 });
    const view = await rotation();
    expect(view.suppressed).toEqual([expect.objectContaining({ role: 'temp', epoch: next })]);
    const markers = view.events.map((e) => e.marker);
    expect(markers).toEqual(
      expect.arrayContaining([
        'escrow_rotation_create_failed',
        'escrow_rotation_create_suppressed',
        'escrow_rotation_fallback_promoted',
      ]),
    );
    const [attempts] = await s.sql<{ n: string }[]>`
      select count(*)::text as n from chain_tx_commitments where kind = 'create_escrow' and status = 'failed'`;
    s.devnet.faults.set({ epochCapReached: undefined });
    // After the switch the target stage replaces the promoted escrow.
    await expect.poll(() => isDone('target', next), { timeout: 40_000, interval: 250 }).toBe(true);
    const [after] = await s.sql<{ n: string }[]>`
      select count(*)::text as n from chain_tx_commitments where kind = 'create_escrow' and status = 'failed'`;
    expect(after!.n).toBe(attempts!.n); // one failed attempt: never re-sent in that epoch
    expect(await stageRow('target', next)).toMatchObject({ status: 'done', created: 1, settled: 1 });
  }, 90_000);

  it('every escrow rotation settled: deposit = host payouts + fees + refund, to the ngonka', async () => {
    const rows = await s.sql<{ escrow_id: string; amount: string; tx_hash: string }[]>`
      select e.escrow_id::text as escrow_id, e.amount::text as amount, c.tx_hash
        from escrows e join chain_tx_commitments c on c.escrow_id = e.escrow_id and c.kind = 'settle_escrow'
       where e.state = 'settled' and c.status = 'included' order by e.escrow_id`;
    expect(rows.length).toBeGreaterThanOrEqual(4);
    let withChat = 0;
    for (const r of rows) {
      const found = await lookupTx(s.chain, r.tx_hash);
      const events =
        found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [];
      const [settled] = findEscrowSettledEvents(events);
      const doc = JSON.parse((await admin('POST', `/devshard/${r.escrow_id}/v1/finalize`)).text);
      const costs = (doc.host_stats as { cost: string | number }[]).reduce(
        (sum, x) => sum + BigInt(x.cost),
        0n,
      );
      expect(settled!.fees).toBe(BigInt(doc.fees));
      expect(settled!.totalPayout).toBe(costs + BigInt(doc.fees));
      expect(settled!.totalPayout + settled!.remainder).toBe(BigInt(r.amount));
      if (costs > 0n) withChat++;
    }
    expect(withChat).toBeGreaterThan(0);
  }, 60_000);
});
