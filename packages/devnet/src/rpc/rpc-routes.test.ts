import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { type JsonBody, startTestDevnet } from '../testing/test-devnet.js';

// chain-and-network.md §3.2.
describe('CometBFT RPC', () => {
  let devnet: Devnet;

  beforeAll(async () => {
    devnet = await startTestDevnet();
  });
  afterAll(() => devnet.close());

  it('reports height as a string, block time and network, and follows blocks', async () => {
    const status = async () =>
      ((await (await fetch(`${devnet.urls.chainRpc}/status`)).json()) as JsonBody).result;
    const first = await status();
    expect(first.node_info.network).toBe('gonka-devnet');
    expect(first.sync_info.latest_block_height).toBe('1');
    expect(first.sync_info.latest_block_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    devnet.blocks.step(3);
    expect((await status()).sync_info.latest_block_height).toBe('4');
  });

  it('answers JSON-RPC status and the node /chain-rpc prefix', async () => {
    const res = await fetch(devnet.urls.chainRpc, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'status' }),
    });
    expect(await res.json()).toMatchObject({ id: 7, result: { node_info: { network: 'gonka-devnet' } } });
    const viaNode = (await (await fetch(`${devnet.urls.node}/chain-rpc/status`)).json()) as JsonBody;
    expect(viaNode.result.sync_info.latest_block_height).toBe(devnet.blocks.height.toString());
  });
});
