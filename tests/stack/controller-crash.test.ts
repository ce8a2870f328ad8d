// Crash tests of the controller as a real OS process (architecture §3: a tx
// hash recorded before broadcast is reconciled against the chain before anything is retried). A tap
// in front of the devnet's chain REST sees every broadcast; the controller is SIGKILLed by pid the
// moment the chain has taken its tx — in the middle of a create job, and in the middle of a settle —
// and a tx whose answer is cut while the tx index stays dark ends `unknown`. After each, the chain
// holds exactly one escrow per request and one settlement, and the money adds up to the ngonka.
import { createHash } from 'node:crypto';
import { queryEscrow } from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainTap, startChainTap } from '../support/chain-tap.js';
import { ADMIN_KEY, adminCall, type Stack, settledEvent, startStack, txFee } from './stack.js';

const AMOUNT = 5n * GNK;

describe('controller killed mid-flight (real processes, SIGKILL by pid)', () => {
  let s: Stack;
  let tap: ChainTap;
  let creatorBefore: bigint;
  let escrowId: number;
  let createTx: string;

  beforeAll(async () => {
    s = await startStack({
      proxies: 1,
      // A tx outcome counts as unknown after 8 s of polling rather than 45 (chain-and-network.md §2.4),
      // and a dead controller's job is run again within about 2 × 3 s rather than 2 × 15 s.
      env: { GATEWAY_TX_POLL_TIMEOUT_MS: '8000', GATEWAY_JOB_LOCK_MS: '3000' },
      controllerChainRest: async (devnet) => {
        tap = await startChainTap(devnet.urls.chainRest);
        return tap.url;
      },
    });
    creatorBefore = s.devnet.chain.balanceOf(s.creator.address);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await tap?.close();
  }, 60_000);

  const controller = (method: string, path: string, body?: object, headers?: Record<string, string>) =>
    adminCall(s.controllerUrl, method, path, body, headers);
  const createBody = () => ({
    amount: AMOUNT.toString(),
    model_id: QWEN_MODEL,
    chain_id: s.chainId,
    private_key_env: 'CREATOR_KEY',
    register: true,
  });
  const registered = async () =>
    (
      await s.sql<
        { escrow_id: string }[]
      >`select escrow_id::text as escrow_id from escrows order by escrow_id`
    ).map((r) => Number(r.escrow_id));
  const killController = () => {
    // The process this test started, by pid; nothing else.
    process.kill(s.controller.child.pid!, 'SIGKILL');
  };

  it('killed after its create job broadcast and before recording the result: the restarted worker finishes the job, exactly one escrow', async () => {
    const lastId = s.devnet.chain.lastEscrowId();
    const cut = tap.cutNextBroadcast(killController);
    const answer = controller('POST', '/v1/admin/escrows', createBody(), {
      'idempotency-key': 'crash-create',
    }).catch((err: Error) => err);
    const broadcast = await cut;
    expect(await answer).toBeInstanceOf(Error); // the controller died before answering
    expect(await s.controller.exited).toBe('SIGKILL');
    // The chain took the tx; the killed controller recorded only that it was broadcast.
    await expect.poll(() => s.devnet.chain.lastEscrowId(), { timeout: 10_000 }).toBe(lastId + 1n);
    expect(await s.sql`select status from chain_tx_commitments where tx_hash = ${broadcast.txHash}`).toEqual([
      { status: 'broadcast' },
    ]);
    expect(await registered()).toEqual([]);

    await s.startController();
    // The restarted controller reconciles the hash and registers the escrow without any retry.
    await expect.poll(registered, { timeout: 60_000, interval: 250 }).toEqual([Number(lastId + 1n)]);
    // The create job the dead controller was running is stalled; the restarted controller's worker
    // takes it up again (job id = create-escrow- + SHA-256 of the Idempotency-Key) and completes it
    // with the same tx, resumed from its commitment — nothing is signed or sent again.
    const jobId = `create-escrow-${createHash('sha256').update('crash-create').digest('hex')}`;
    const job = () => controller('GET', `/v1/admin/escrows/jobs/${jobId}`);
    await expect
      .poll(async () => (await job()).json?.state, { timeout: 90_000, interval: 500 })
      .toBe('completed');
    expect((await job()).json).toMatchObject({
      tx_hash: broadcast.txHash,
      result: { escrow_id: Number(lastId + 1n), tx_hash: broadcast.txHash, registered: true },
      error: null,
    });
    const retried = await controller('POST', '/v1/admin/escrows', createBody(), {
      'idempotency-key': 'crash-create',
    });
    expect(retried.status, retried.text).toBe(200);
    expect(retried.json).toMatchObject({
      escrow_id: Number(lastId + 1n),
      tx_hash: broadcast.txHash,
      registered: true,
    });
    escrowId = retried.json.escrow_id;
    expect(
      await s.sql`select status, escrow_id::text as escrow_id from chain_tx_commitments where tx_hash = ${broadcast.txHash}`,
    ).toEqual([{ status: 'included', escrow_id: String(escrowId) }]);
    createTx = broadcast.txHash;
    expect(s.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    expect(tap.broadcasts.filter((b) => b.txHash === broadcast.txHash)).toHaveLength(1);
    expect(tap.broadcasts).toHaveLength(1);
  }, 240_000);

  it('killed mid-settle (settle tx broadcast, result not recorded): settles exactly once, money to the ngonka', async () => {
    // Some billed work first, through the proxy with the official client.
    const client = new OpenAI({
      apiKey: ADMIN_KEY,
      baseURL: `${s.proxyUrls[0]}/v1`,
      maxRetries: 0,
      timeout: 60_000,
    });
    await expect
      .poll(
        () =>
          client.chat.completions
            .create({
              model: QWEN_MODEL,
              messages: [{ role: 'user', content: 'before the crash' }],
              max_tokens: 16,
            })
            .then((c) => c.choices[0]!.message.content?.length ?? 0)
            .catch(() => 0),
        { timeout: 30_000, interval: 250 },
      )
      .toBeGreaterThan(0);

    const cut = tap.cutNextBroadcast(killController);
    const accepted = await controller('POST', `/v1/admin/devshards/${escrowId}/settle`, {
      private_key_env: 'CREATOR_KEY',
    });
    expect(accepted.status, accepted.text).toBe(202);
    const broadcast = await cut;
    expect(await s.controller.exited).toBe('SIGKILL');
    expect(await s.sql`select state from escrows where escrow_id = ${String(escrowId)}`).toEqual([
      { state: 'settling' },
    ]);

    await s.startController();
    // The settle job the dead controller held is picked up again; it reconciles the hash first.
    await expect
      .poll(async () => (await controller('GET', `/v1/admin/devshards/${escrowId}`)).json?.state, {
        timeout: 90_000,
        interval: 500,
      })
      .toBe('settled');
    const view = (await controller('GET', `/v1/admin/devshards/${escrowId}`)).json;
    expect(view.settle_tx_hash).toBe(broadcast.txHash);
    expect(tap.broadcasts.filter((b) => b.txHash === broadcast.txHash)).toHaveLength(1);
    expect(tap.broadcasts).toHaveLength(2); // one create, one settle
    expect((await queryEscrow(s.chain, BigInt(escrowId))).escrow?.settled).toBe(true);
    expect(await s.sql`select status from chain_tx_commitments where kind = 'settle_escrow'`).toEqual([
      { status: 'included' },
    ]);

    const settled = await settledEvent(s.chain, broadcast.txHash);
    const doc = JSON.parse((await controller('POST', `/devshard/${escrowId}/v1/finalize`)).text);
    const costs = doc.host_stats.reduce(
      (sum: bigint, x: { cost: string | number }) => sum + BigInt(x.cost),
      0n,
    );
    expect(costs).toBeGreaterThan(0n);
    expect(settled.totalPayout).toBe(costs + BigInt(doc.fees));
    expect(settled.totalPayout + settled.remainder).toBe(AMOUNT);
    expect(s.devnet.chain.balanceOf(s.creator.address)).toBe(
      creatorBefore - AMOUNT - (await txFee(s.chain, createTx)) + settled.remainder,
    );
  }, 240_000);

  it('a create whose outcome is unknown (answer cut, tx index dark) is reconciled by hash, never sent again', async () => {
    const lastId = s.devnet.chain.lastEscrowId();
    tap.darkenTxIndex(true);
    const cut = tap.cutNextBroadcast();
    // The controller polls the dark index until its deadline (8 s here), then answers 504 naming the hash.
    const unknown = await controller('POST', '/v1/admin/escrows', createBody(), {
      'idempotency-key': 'unknown-outcome',
    });
    const broadcast = await cut;
    expect(unknown.status, unknown.text).toBe(504);
    expect(unknown.json.error.message).toContain(broadcast.txHash);
    expect(await s.sql`select status from chain_tx_commitments where tx_hash = ${broadcast.txHash}`).toEqual([
      { status: 'unknown' },
    ]);
    expect(s.devnet.chain.lastEscrowId()).toBe(lastId + 1n); // it did land

    tap.darkenTxIndex(false);
    const retried = await controller('POST', '/v1/admin/escrows', createBody(), {
      'idempotency-key': 'unknown-outcome',
    });
    expect(retried.status, retried.text).toBe(200);
    expect(retried.json).toMatchObject({ escrow_id: Number(lastId + 1n), tx_hash: broadcast.txHash });
    expect(s.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    expect(tap.broadcasts.filter((b) => b.txHash === broadcast.txHash)).toHaveLength(1);
    expect(tap.broadcasts).toHaveLength(3);
    expect(await registered()).toContain(Number(lastId + 1n));
  }, 180_000);
});
