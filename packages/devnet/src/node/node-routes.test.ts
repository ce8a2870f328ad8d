import { PrivateKey } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { MINIMAX_MODEL, QWEN_MODEL } from '../genesis.js';
import { account, type JsonBody, startTestDevnet } from '../testing/test-devnet.js';

// chain-and-network.md §3.3: the node API, consistent with epoch_params.
describe('public node API', () => {
  let devnet: Devnet;
  const get = async (path: string) => {
    const res = await fetch(`${devnet.urls.node}${path}`);
    return { status: res.status, body: (await res.json()) as JsonBody };
  };
  const post = (path: string, body?: unknown) =>
    fetch(`${devnet.urls.node}${path}`, {
      method: 'POST',
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    devnet = await startTestDevnet({
      epoch: {
        epochLength: 30,
        pocStageDuration: 4,
        pocValidationDelay: 1,
        pocValidationDuration: 2,
        setNewValidatorsDelay: 1,
      },
    });
  });
  afterAll(() => devnet.close());

  it('follows the epoch schedule in /v1/epochs/latest (switch height by the §3.3 formula)', async () => {
    const latest = async () => (await get('/v1/epochs/latest')).body;
    let e = await latest();
    expect(e).toMatchObject({
      block_height: 1,
      phase: 'Inference',
      latest_epoch: { index: 0 },
      is_confirmation_poc_active: false,
    });
    expect(e.next_epoch_stages).toMatchObject({
      epoch_index: 1,
      poc_start: 30,
      set_new_validators: 30 + 4 + 1 + 2 + 1,
      next_poc_start: 60,
    });
    devnet.blocks.step(29); // height 30: PoC of epoch 1 starts
    e = await latest();
    expect(e).toMatchObject({
      block_height: 30,
      phase: 'PoCGenerate',
      latest_epoch: { index: 1, poc_start_block_height: 30 },
    });
    expect(e.epoch_stages.set_new_validators).toBe(38);
    devnet.blocks.step(8); // height 38: new validators, inference phase of epoch 1
    expect(await latest()).toMatchObject({ phase: 'Inference', latest_epoch: { index: 1 } });
    expect(devnet.epochs.current()).toMatchObject({ effective: 1n, latest: 1n, phase: 'Inference' });
  });

  it('reports a confirmation PoC switched on from the API or the admin route', async () => {
    devnet.epochs.setConfirmationPoc('CONFIRMATION_POC_GENERATION');
    expect((await get('/v1/epochs/latest')).body).toMatchObject({
      is_confirmation_poc_active: true,
      active_confirmation_poc_event: {
        phase: 'CONFIRMATION_POC_GENERATION',
        trigger_height: Number(devnet.blocks.height),
      },
    });
    await post('/devnet/admin/confirmation-poc', { phase: null });
    expect((await get('/v1/epochs/latest')).body.is_confirmation_poc_active).toBe(false);
  });

  it('lists participants with the §3.3 shape and their own inference URLs', async () => {
    const { body } = await get('/v1/epochs/current/participants');
    const list = body.active_participants.participants;
    expect(list).toHaveLength(4);
    expect(list.map((p: { weight: number }) => p.weight)).toEqual([400, 300, 200, 100]);
    for (const [i, p] of list.entries()) {
      expect(p).toMatchObject({
        index: devnet.participants[i]!.address,
        inference_url: devnet.participants[i]!.inferenceUrl,
      });
      expect(p.ml_nodes[0].ml_nodes[0]).toHaveProperty('poc_weight');
    }
    expect(list[3].models).toEqual([QWEN_MODEL]);
    expect(body.excluded_participants).toEqual([]);
    expect(body.active_participants_bytes).toMatch(/^[0-9a-f]+$/);
    expect((await get('/v1/epochs/1/participants')).status).toBe(200);
    expect((await get('/v1/epochs/9/participants')).status).toBe(404);
  });

  it('serves governance models, identity and status', async () => {
    expect((await get('/v1/governance/models')).body.models.map((m: { id: string }) => m.id)).toEqual([
      QWEN_MODEL,
      MINIMAX_MODEL,
    ]);
    expect((await get('/v1/identity')).body).toMatchObject({
      address: devnet.participants[0]!.address,
      data: { delegate_ta: {} },
    });
    expect((await get('/v1/status')).body).toEqual({ status: 'ok' });
  });

  it('serves /v2/accounts: pubkey and spendable balance, 404 unknown, error without pubkey', async () => {
    const creator = account(devnet, 'creator-0');
    const res = await fetch(`${devnet.urls.node}/v2/accounts/${creator.address}`);
    expect(await res.text()).toBe(
      `{"pubkey":"${Buffer.from(creator.key.publicKey).toString('base64')}","balance":1000000000000,"denom":"ngonka"}`,
    );
    expect(await get(`/v2/accounts/${PrivateKey.random().address}`)).toMatchObject({
      status: 404,
      body: { message: 'account not found' },
    });
    expect(await get(`/v2/accounts/${account(devnet, 'creator-fresh').address}`)).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/pubkey unavailable/) },
    });
  });

  it('serves the chain REST under /chain-api', async () => {
    expect(
      (await get('/chain-api/cosmos/base/tendermint/v1beta1/node_info')).body.default_node_info.network,
    ).toBe('gonka-devnet');
    expect(
      (await get('/chain-api/productscience/inference/inference/params')).body.params.devshard_escrow_params
        .group_size,
    ).toBe(16);
  });

  it('controls blocks, time and hosts through the admin routes', async () => {
    const h = devnet.blocks.height;
    expect(await (await post('/devnet/admin/blocks/step', { count: 3 })).json()).toEqual({
      height: (h + 3n).toString(),
    });
    const t = devnet.blocks.timeNs;
    await post('/devnet/admin/blocks/advance-time', { ms: 90_000 });
    expect(devnet.blocks.timeNs - t >= 90_000_000_000n).toBe(true);
    await post('/devnet/admin/blocks/pause');
    expect(devnet.blocks.paused).toBe(true);
    await post('/devnet/admin/blocks/resume');
    expect(devnet.blocks.paused).toBe(false);
    const host = devnet.participants[3]!;
    await post(`/devnet/admin/hosts/${host.address}/stop`);
    expect(host.running).toBe(false);
    await post(`/devnet/admin/hosts/${host.address}/start`);
    expect(host.running).toBe(true);
    expect((await post(`/devnet/admin/hosts/${PrivateKey.random().address}/stop`)).status).toBe(404);
  });
});
