import { PrivateKey } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { startDevnet } from './devnet.js';
import { account, createEscrow, type JsonBody, startTestDevnet, TxFactory } from './testing/test-devnet.js';

describe('startDevnet', () => {
  it('runs two independent devnets in one process', async () => {
    const [a, b] = await Promise.all([startTestDevnet(), startTestDevnet({ chainId: 'gonka-devnet-b' })]);
    try {
      expect(a.urls.chainRest).not.toBe(b.urls.chainRest);
      await createEscrow(a, new TxFactory(a), account(a, 'creator-0'));
      expect(a.chain.lastEscrowId()).toBe(1n);
      expect(b.chain.lastEscrowId()).toBe(0n);
      a.blocks.step(5);
      expect(b.blocks.height).toBe(1n);
      const node = (await (
        await fetch(`${b.urls.chainRest}/cosmos/base/tendermint/v1beta1/node_info`)
      ).json()) as JsonBody;
      expect(node.default_node_info.network).toBe('gonka-devnet-b');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('funds and allowlists extra keys and DEVSHARD_PRIVATE_KEY, without publishing their pubkeys', async () => {
    const extra = PrivateKey.random();
    const fromEnv = PrivateKey.random();
    const devnet = await startDevnet({
      ports: 'ephemeral',
      blockIntervalMs: 0,
      extraFundedKeys: [extra.exportHex()],
      env: { DEVSHARD_PRIVATE_KEY: `0x${fromEnv.exportHex()}` },
    });
    try {
      for (const key of [extra, fromEnv]) {
        expect(devnet.chain.balanceOf(key.address)).toBe(1_000_000_000_000n);
        expect(devnet.chain.params().devshardEscrow.allowedCreatorAddresses).toContain(key.address);
        expect(devnet.chain.account(key.address)!.pubKey).toBeNull();
      }
    } finally {
      await devnet.close();
    }
  });

  it('exposes the documented accounts and participants, and closes its servers', async () => {
    const devnet = await startTestDevnet();
    expect(devnet.accounts.map((a) => [a.name, a.allowlisted, a.pubkeyPublished])).toEqual([
      ['creator-0', true, true],
      ['creator-1', true, true],
      ['creator-2', true, true],
      ['creator-fresh', true, false],
      ['outsider', false, true],
      ['outsider-fresh', false, false],
    ]);
    expect(devnet.participants.map((p) => p.weight)).toEqual([400n, 300n, 200n, 100n]);
    const urls = [devnet.urls.chainRest, devnet.urls.node, devnet.participants[0]!.inferenceUrl];
    await devnet.close();
    await devnet.close(); // idempotent
    for (const url of urls) await expect(fetch(`${url}/v1/status`)).rejects.toThrow();
  });

  it('fails cleanly when a port is taken, leaving nothing open', async () => {
    const first = await startTestDevnet();
    try {
      const port = Number(new URL(first.urls.node).port);
      await expect(
        startDevnet({
          ports: { chainRest: 0, chainRpc: 0, node: port, participants: [0, 0, 0, 0] },
          env: {},
        }),
      ).rejects.toThrow();
    } finally {
      await first.close();
    }
  });
});
