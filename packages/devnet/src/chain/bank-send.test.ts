import { PrivateKey } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import {
  account,
  broadcast,
  CREATE_FEE,
  deliver,
  snapshot,
  startTestDevnet,
  TxFactory,
} from '../testing/test-devnet.js';
import { moduleAddress } from './bank.js';

// chain-and-network.md §5: a first signed tx (publish-pubkey is a 1 ngonka self-send) records the key.
describe('bank MsgSend and pubkey publication', () => {
  let devnet: Devnet;
  let txs: TxFactory;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    txs = new TxFactory(devnet);
  });
  afterAll(() => devnet.close());

  const accountJson = async (address: string) =>
    (await (await fetch(`${devnet.urls.chainRest}/cosmos/auth/v1beta1/accounts/${address}`)).json()) as {
      account: { pub_key: { '@type': string; key: string } | null; account_number: string; sequence: string };
    };

  it('publishes the pubkey with a 1 ngonka self-send, charging only the fee', async () => {
    const fresh = account(devnet, 'creator-fresh');
    expect((await accountJson(fresh.address)).account.pub_key).toBeNull();
    const before = devnet.chain.balanceOf(fresh.address);
    const tx = await deliver(devnet, txs.send(fresh.key, fresh.address, 1n));
    expect(tx.code).toBe(0);
    expect((await accountJson(fresh.address)).account.pub_key).toEqual({
      '@type': '/cosmos.crypto.secp256k1.PubKey',
      key: Buffer.from(fresh.key.publicKey).toString('base64'),
    });
    expect(devnet.chain.balanceOf(fresh.address)).toBe(before - CREATE_FEE);
    const events = tx.events.map((e) => e.type);
    expect(events).toEqual(
      expect.arrayContaining(['tx', 'message', 'coin_spent', 'coin_received', 'transfer']),
    );
  });

  it('moves coins to a new address, creating its account with the next number', async () => {
    const from = account(devnet, 'creator-0');
    const to = PrivateKey.random().address;
    expect((await fetch(`${devnet.urls.chainRest}/cosmos/auth/v1beta1/accounts/${to}`)).status).toBe(404);
    await deliver(devnet, txs.send(from.key, to, 12_345n));
    expect(devnet.chain.balanceOf(to)).toBe(12_345n);
    expect((await accountJson(to)).account.pub_key).toBeNull();
  });

  it('rejects a send above spendable and to a module account, changing nothing', async () => {
    const from = account(devnet, 'outsider');
    for (const [tx, code] of [
      [txs.send(from.key, from.address, devnet.chain.balanceOf(from.address)), 5],
      [txs.send(from.key, moduleAddress('inference'), 1n), 4],
    ] as const) {
      const before = snapshot(devnet);
      const { txResponse } = await broadcast(devnet, tx);
      expect(txResponse.code).toBe(code);
      devnet.blocks.step();
      expect(snapshot(devnet)).toEqual(before);
    }
  });
});
