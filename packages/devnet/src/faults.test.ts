import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from './devnet.js';
import { MINIMAX_MODEL, QWEN_MODEL } from './genesis.js';
import {
  account,
  broadcast,
  getTx,
  type JsonBody,
  snapshot,
  startTestDevnet,
  TxFactory,
} from './testing/test-devnet.js';

// Every fault, switched at runtime from the embedding API or the admin route.
describe('faults', () => {
  let devnet: Devnet;
  let txs: TxFactory;
  const rest = (path: string) => fetch(`${devnet.urls.chainRest}${path}`);

  beforeAll(async () => {
    devnet = await startTestDevnet();
    txs = new TxFactory(devnet);
  });
  afterEach(() => devnet.faults.clear());
  afterAll(() => devnet.close());

  it('fails chain queries matching a path, for a number of requests, then recovers', async () => {
    devnet.faults.set({ chainQuery: { status: 503, match: '/params', remaining: 2 } });
    expect((await rest('/productscience/inference/inference/params')).status).toBe(503);
    expect((await rest('/cosmos/base/tendermint/v1beta1/node_info')).status).toBe(200); // not matched
    expect(
      (await fetch(`${devnet.urls.node}/chain-api/productscience/inference/inference/params`)).status,
    ).toBe(503);
    expect((await rest('/productscience/inference/inference/params')).status).toBe(200);
    expect(devnet.faults.current().chainQuery).toBeUndefined();
  });

  it('slows chain queries and fails node queries', async () => {
    devnet.faults.set({ chainQuery: { delayMs: 50 }, nodeQuery: { status: 500, match: '/v1/epochs' } });
    expect((await rest('/cosmos/base/tendermint/v1beta1/node_info')).status).toBe(200);
    expect((await fetch(`${devnet.urls.node}/v1/epochs/latest`)).status).toBe(500);
    expect((await fetch(`${devnet.urls.node}/v1/status`)).status).toBe(200);
  });

  it('accepts a broadcast that executes but is never indexed', async () => {
    devnet.faults.set({ broadcast: { mode: 'never-indexed', remaining: 1 } });
    const last = devnet.chain.lastEscrowId();
    const tx = txs.createEscrow(account(devnet, 'creator-0').key);
    expect((await broadcast(devnet, tx)).txResponse.code).toBe(0);
    devnet.blocks.step(2);
    expect(devnet.chain.lastEscrowId()).toBe(last + 1n); // it landed…
    expect((await getTx(devnet, tx.txHash)).status).toBe(404); // …but the index never shows it
    expect((await broadcast(devnet, tx)).txResponse.code).toBe(19); // and it cannot land twice
  });

  it('accepts a broadcast that is dropped from the mempool and never lands', async () => {
    devnet.faults.set({ broadcast: { mode: 'never-included' } });
    const before = snapshot(devnet);
    const tx = txs.createEscrow(account(devnet, 'creator-0').key);
    expect((await broadcast(devnet, tx)).txResponse.code).toBe(0);
    devnet.blocks.step();
    expect(snapshot(devnet)).toEqual(before);
    expect((await getTx(devnet, tx.txHash)).status).toBe(404);
  });

  it('drops the connection, or never answers, after the tx was accepted; the tx still commits', async () => {
    for (const mode of ['drop-connection', 'no-response'] as const) {
      devnet.faults.set({ broadcast: { mode, remaining: 1 } });
      const tx = txs.createEscrow(account(devnet, 'creator-1').key);
      await expect(
        fetch(`${devnet.urls.chainRest}/cosmos/tx/v1beta1/txs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            tx_bytes: Buffer.from(tx.txBytes).toString('base64'),
            mode: 'BROADCAST_MODE_SYNC',
          }),
          signal: AbortSignal.timeout(500),
        }),
      ).rejects.toThrow();
      devnet.blocks.step();
      expect((await getTx(devnet, tx.txHash)).txResponse?.code).toBe(0);
    }
  });

  it('makes an account spendable-poor (insufficient funds)', async () => {
    const creator = account(devnet, 'creator-2');
    devnet.faults.set({ insufficientFunds: [creator.address] });
    expect((await broadcast(devnet, txs.createEscrow(creator.key))).txResponse).toMatchObject({
      code: 5,
      codespace: 'sdk',
    });
    const spendable = (await (
      await rest(`/cosmos/bank/v1beta1/spendable_balances/${creator.address}`)
    ).json()) as { balances: unknown[] };
    expect(spendable.balances).toEqual([]);
  });

  it('removes a creator from the allowlist, as params show', async () => {
    const creator = account(devnet, 'creator-2');
    await fetch(`${devnet.urls.node}/devnet/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ removedCreators: [creator.address] }),
    });
    expect((await broadcast(devnet, txs.createEscrow(creator.key))).txResponse.code).toBe(1170);
    const params = (await (await rest('/productscience/inference/inference/params')).json()) as JsonBody;
    expect(params.params.devshard_escrow_params.allowed_creator_addresses).not.toContain(creator.address);
  });

  it('reaches the per-epoch cap', async () => {
    devnet.faults.set({ epochCapReached: true });
    expect(
      (await broadcast(devnet, txs.createEscrow(account(devnet, 'creator-2').key))).txResponse.code,
    ).toBe(1172);
  });

  it('takes a model out of the epoch', async () => {
    devnet.faults.set({ modelsMissing: [MINIMAX_MODEL] });
    expect(
      (await broadcast(devnet, txs.createEscrow(account(devnet, 'creator-2').key, undefined, MINIMAX_MODEL)))
        .txResponse.code,
    ).toBe(1173);
    const participants = (await (
      await fetch(`${devnet.urls.node}/v1/epochs/current/participants`)
    ).json()) as JsonBody;
    expect(participants.active_participants.participants[0].models).toEqual([QWEN_MODEL]);
  });

  it('pauses block production (timer), while explicit steps still work', async () => {
    const timed = await startTestDevnet({ blockIntervalMs: 10 });
    try {
      await new Promise<void>((resolve) => {
        const off = timed.blocks.onBlock(() => {
          off();
          resolve();
        });
      });
      timed.blocks.pause();
      const paused = timed.blocks.height;
      await new Promise((r) => setTimeout(r, 100));
      expect(timed.blocks.height).toBe(paused);
      expect(timed.blocks.step()).toBe(paused + 1n);
      timed.blocks.resume();
      await new Promise<void>((resolve) => timed.blocks.onBlock(() => resolve()));
      expect(timed.blocks.height > paused + 1n).toBe(true);
    } finally {
      await timed.close();
    }
  });

  it('rejects unknown fault settings on the admin route', async () => {
    const res = await fetch(`${devnet.urls.node}/devnet/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ nonsense: true }),
    });
    expect(res.status).toBe(400);
  });
});
