// The settle-window soak (`pnpm test:rotation-soak`; skipped in the suite, whose CI-sized version is
// apps/controller/src/upkeep/retire-by-pass.test.ts): the whole stack as OS processes on a fast
// devnet — 250 ms blocks, 200-block (50 s) epochs, pre_poc_blocks 80 (20 s), the default 15 s
// rotation tick — with chat running through both proxies across five epoch switches. Nothing may
// fail: no chat request, no settle; no escrow may be left with its settle window closed; every
// settled deposit = host payouts + fees + refund, and the creator's balance moves by exactly the
// deposits, the tx fees and the refunds. The numbers are printed at the end.
// Knobs: SOAK_SWITCHES (default 5), SOAK_EXECUTION_TIMEOUT (seconds; default the devnet's 1,920),
// SOAK_SETTLE_MARGIN_MS (GATEWAY_SETTLE_MARGIN_MS; default the controller's).
import { lookupTx } from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_KEY,
  type ChatTally,
  chatThrough,
  type Stack,
  settledEvent,
  startStack,
  txFee,
  USER_KEY,
} from './stack.js';

const RUN = process.env.ROTATION_SOAK === '1';
const SWITCHES = Number(process.env.SOAK_SWITCHES ?? 5);
const EXECUTION_TIMEOUT = process.env.SOAK_EXECUTION_TIMEOUT;
const MARGIN_MS = process.env.SOAK_SETTLE_MARGIN_MS;
const EPOCH_BLOCKS = 200;
const BLOCK_MS = 250;
const PRE_POC_BLOCKS = 80;
const AMOUNT = 5n * GNK;
/** The switch into epoch n (PoC takes the 20 blocks before set_new_validators = poc_start + 20). */
const switchInto = (n: number) => n * EPOCH_BLOCKS + 20;

const openai = (url: string) =>
  new OpenAI({ apiKey: USER_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: 60_000 });

describe.skipIf(!RUN)('settle-window soak: five epoch switches under load on 50 s epochs', () => {
  let s: Stack;
  const tally: ChatTally = { served: 0, failures: [] };
  let chatting = false;
  let traffic: Promise<void>[] = [];
  let creatorBefore = 0n;

  beforeAll(async () => {
    s = await startStack({
      epoch: { epochLength: EPOCH_BLOCKS },
      devnet: {
        blockIntervalMs: BLOCK_MS,
        ...(EXECUTION_TIMEOUT
          ? {
              params: (p) => {
                p.devshardEscrow.executionTimeout = BigInt(EXECUTION_TIMEOUT);
              },
            }
          : {}),
      },
      env: MARGIN_MS ? { GATEWAY_SETTLE_MARGIN_MS: MARGIN_MS } : {},
    });
    creatorBefore = s.devnet.chain.balanceOf(s.creator.address);
  }, 120_000);
  afterAll(async () => {
    chatting = false;
    await Promise.allSettled(traffic);
    await s?.close();
  }, 60_000);

  const admin = async (method: string, path: string, body?: object) => {
    const res = await fetch(`${s.proxyUrls[0]}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
  };
  const epochNow = () => Number(s.devnet.epochs.current().effective);
  const stageDone = async (stage: string, epoch: number) =>
    (
      await s.sql`select 1 from rotation_stages
        where model_id = ${QWEN_MODEL} and stage = ${stage} and epoch = ${epoch} and status = 'done'`
    ).length === 1;

  it('no chat request fails, no deposit is stranded, every ngonka is accounted for', async () => {
    const started = Date.now();
    const on = await admin('POST', '/v1/admin/settings', {
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
    expect(on.status, on.text).toBe(200);
    // The first regular escrow routed (this epoch's target stage, or the next one's).
    await expect
      .poll(
        async () => (await s.sql`select 1 from escrows where role = 'regular' and state = 'active'`).length,
        {
          timeout: 120_000,
          interval: 500,
        },
      )
      .toBeGreaterThan(0);
    for (const url of s.proxyUrls) {
      await expect
        .poll(
          () =>
            openai(url)
              .chat.completions.create({
                model: QWEN_MODEL,
                messages: [{ role: 'user', content: 'ready?' }],
                max_tokens: 64,
              })
              .then(() => true)
              .catch(() => false),
          { timeout: 60_000, interval: 500 },
        )
        .toBe(true);
    }
    const firstEpoch = epochNow();
    chatting = true;
    traffic = s.proxyUrls.flatMap((url, i) =>
      [2 * i, 2 * i + 1].map((n) =>
        chatThrough(
          s,
          url,
          { tag: `soak ${n}`, maxTokens: 64, pauseMs: 100, timeoutMs: 60000, running: () => chatting },
          tally,
        ),
      ),
    );
    const lastEpoch = firstEpoch + SWITCHES;
    await expect
      .poll(async () => epochNow() >= lastEpoch && (await stageDone('target', lastEpoch)), {
        timeout: (SWITCHES + 2) * EPOCH_BLOCKS * BLOCK_MS * 2,
        interval: 1_000,
      })
      .toBe(true);
    chatting = false;
    await Promise.all(traffic);

    // Everything rotated out settles (the current epoch's escrows keep serving).
    await expect
      .poll(
        async () =>
          (
            await s.sql`select escrow_id from escrows
              where state not in ('settled', 'active') or (state = 'active' and epoch_index < ${lastEpoch - 1})`
          ).length,
        { timeout: 180_000, interval: 1_000 },
      )
      .toBe(0);

    const escrows = await s.sql<{ escrow_id: string; role: string; state: string; epoch_index: string }[]>`
      select escrow_id::text, role, state, epoch_index::text from escrows order by escrow_id`;
    const creates = await s.sql<{ tx_hash: string }[]>`
      select tx_hash from chain_tx_commitments where kind = 'create_escrow' and status = 'included'`;
    const settles = await s.sql<{ escrow_id: string; tx_hash: string }[]>`
      select escrow_id::text, tx_hash from chain_tx_commitments where kind = 'settle_escrow' and status = 'included'`;
    const events = await s.sql<{ marker: string; n: string }[]>`
      select marker, count(*)::text as n from rotation_events group by marker order by marker`;
    const markers = Object.fromEntries(events.map((e) => [e.marker, Number(e.n)]));
    const safetyEvents = await s.sql<{ marker: string; epoch: string; detail: object }[]>`
      select marker, epoch::text, detail from rotation_events
       where marker in ('escrow_past_retire_by', 'escrow_settle_window_closed_unsettled') order by id`;

    // Money: each settled deposit, and the creator's balance to the ngonka.
    let refunds = 0n;
    let payouts = 0n;
    let gas = 0n;
    let tightest = Number.POSITIVE_INFINITY;
    for (const st of settles) {
      const settled = await settledEvent(s.chain, st.tx_hash);
      const doc = JSON.parse((await admin('POST', `/devshard/${st.escrow_id}/v1/finalize`)).text);
      const costs = (doc.host_stats as { cost: string | number }[]).reduce(
        (sum, x) => sum + BigInt(x.cost),
        0n,
      );
      expect(settled.totalPayout).toBe(costs + BigInt(doc.fees));
      expect(settled.totalPayout + settled.remainder).toBe(AMOUNT);
      refunds += settled.remainder;
      payouts += settled.totalPayout;
      gas += await txFee(s.chain, st.tx_hash);
      const escrow = escrows.find((e) => e.escrow_id === st.escrow_id)!;
      const found = await lookupTx(s.chain, st.tx_hash);
      const height =
        found.kind === 'found' && found.outcome.status === 'included' ? Number(found.outcome.height) : NaN;
      tightest = Math.min(tightest, switchInto(Number(escrow.epoch_index) + 2) - height);
    }
    for (const c of creates) gas += await txFee(s.chain, c.tx_hash);
    expect(s.devnet.chain.balanceOf(s.creator.address)).toBe(
      creatorBefore - BigInt(creates.length) * AMOUNT - gas + refunds,
    );

    const status = (await fetch(`${s.proxyUrls[0]}/v1/status`).then((r) => r.json())) as {
      settle_window_closed: { escrows: unknown[] } | null;
    };
    const debug = (await admin('GET', '/v1/debug/rotation')).json;
    const numbers = {
      minutes: Math.round((Date.now() - started) / 6_000) / 10,
      epochs: `${firstEpoch} → ${lastEpoch}`,
      execution_timeout_s: Number(s.devnet.chain.params().devshardEscrow.executionTimeout),
      requests_served: tally.served,
      requests_failed: tally.failures.length,
      escrows_created: creates.length,
      escrows_settled: settles.length,
      escrows_serving_at_end: escrows.filter((e) => e.state === 'active').length,
      closed_unsettled: debug.settle_window.closed_unsettled.length,
      tightest_settle_blocks_before_close: tightest,
      tightest_settle_seconds_before_close: (tightest * BLOCK_MS) / 1_000,
      host_payouts_ngonka: payouts.toString(),
      refunds_ngonka: refunds.toString(),
      gas_ngonka: gas.toString(),
      block_time_ms: debug.settle_window.block_time_ms,
      markers,
      safety_events: safetyEvents,
    };
    process.stdout.write(`rotation soak: ${JSON.stringify(numbers, null, 2)}\n`);
    expect(tally.failures).toEqual([]);
    expect(markers.escrow_rotation_settle_failed ?? 0).toBe(0);
    expect(markers.escrow_settle_window_closed_unsettled ?? 0).toBe(0);
    expect(debug.settle_window.closed_unsettled).toEqual([]);
    expect(status.settle_window_closed?.escrows).toEqual([]);
    expect(tally.served).toBeGreaterThan(SWITCHES * 20);
  }, 1_200_000);
});
