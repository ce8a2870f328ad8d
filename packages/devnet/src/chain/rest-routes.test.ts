import { MSG_SETTLE_DEVSHARD_ESCROW, PrivateKey } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { QWEN_MODEL } from '../genesis.js';
import { account, broadcast, type JsonBody, startTestDevnet, TxFactory } from '../testing/test-devnet.js';
import { moduleAddress } from './bank.js';

// chain-and-network.md §3.1, §3.4: paths, shapes, 64-bit integers as strings.
describe('chain REST queries', () => {
  let devnet: Devnet;
  const get = async (path: string) => {
    const res = await fetch(`${devnet.urls.chainRest}${path}`);
    return { status: res.status, body: (await res.json()) as JsonBody };
  };

  beforeAll(async () => {
    devnet = await startTestDevnet();
  });
  afterAll(() => devnet.close());

  it('serves params with 64-bit integers as strings and uint32 as numbers', async () => {
    const { body } = await get('/productscience/inference/inference/params');
    const e = body.params.devshard_escrow_params;
    expect(e).toMatchObject({
      min_amount: '5000000000',
      max_amount: '10000000000',
      max_escrows_per_epoch: 100,
      group_size: 16,
      token_price: '1',
      max_nonce: 1_000_000,
      create_devshard_fee: '10000',
      fee_per_nonce: '1000',
      refusal_timeout: '60',
      execution_timeout: '1920',
      validation_rate: 1000,
      vote_threshold_factor: 50,
      default_inference_seal_grace_nonces: 160,
    });
    expect(e.approved_versions.map((v: { name: string }) => v.name)).toEqual(['v5', 'v4']);
    expect(e.allowed_creator_addresses).toContain(account(devnet, 'creator-0').address);
    expect(e.allowed_creator_addresses).not.toContain(account(devnet, 'outsider').address);
    expect(body.params.validation_params).toEqual({ timestamp_expiration: '60', timestamp_advance: '30' });
    expect(body.params.epoch_params.epoch_length).toBe('200');
    expect(body.params.fee_params.groups[0]).toEqual({
      name: 'cosmos',
      min_gas_price: '10',
      msgs: [{ type_url: '/cosmos.bank.v1beta1.MsgSend' }],
    });
    expect(body.params.transfer_agent_access_params).toEqual({ allowed_transfer_addresses: [] });
    expect(body.params.developer_access_params).toEqual({
      until_block_height: '0',
      allowed_developer_addresses: [],
    });
    expect(
      (await get('/productscience/inference/inference/devshard_approved_versions')).body.versions,
    ).toHaveLength(2);
  });

  it('serves accounts (pub_key null until signed), module accounts and 404 for unknown ones', async () => {
    const fresh = account(devnet, 'creator-fresh');
    const { body } = await get(`/cosmos/auth/v1beta1/accounts/${fresh.address}`);
    expect(body.account).toMatchObject({
      '@type': '/cosmos.auth.v1beta1.BaseAccount',
      address: fresh.address,
      pub_key: null,
      sequence: '0',
    });
    expect(body.account.account_number).toMatch(/^[0-9]+$/);
    expect(
      (await get(`/cosmos/auth/v1beta1/accounts/${moduleAddress('inference')}`)).body.account,
    ).toMatchObject({
      '@type': '/cosmos.auth.v1beta1.ModuleAccount',
      name: 'inference',
    });
    expect((await get(`/cosmos/auth/v1beta1/accounts/${PrivateKey.random().address}`)).status).toBe(404);
    expect((await get('/cosmos/auth/v1beta1/accounts/not-an-address')).status).toBe(400);
  });

  it('serves bank balances, empty for an unknown address', async () => {
    expect((await get(`/cosmos/bank/v1beta1/balances/${account(devnet, 'creator-0').address}`)).body).toEqual(
      {
        balances: [{ denom: 'ngonka', amount: '1000000000000' }],
        pagination: { next_key: null, total: '1' },
      },
    );
    expect((await get(`/cosmos/bank/v1beta1/balances/${PrivateKey.random().address}`)).body.balances).toEqual(
      [],
    );
  });

  it('serves node_info with the chain id, the latest block, participants and epoch group data', async () => {
    expect((await get('/cosmos/base/tendermint/v1beta1/node_info')).body.default_node_info.network).toBe(
      'gonka-devnet',
    );
    expect((await get('/cosmos/base/tendermint/v1beta1/blocks/latest')).body.block.header.height).toBe(
      devnet.blocks.height.toString(),
    );
    const host = devnet.participants[0]!;
    expect(
      (await get(`/productscience/inference/inference/participant/${host.address}`)).body.participant,
    ).toMatchObject({
      index: host.address,
      inference_url: host.inferenceUrl,
      weight: 400,
      coin_balance: '0',
    });
    expect(
      (await get(`/productscience/inference/inference/participant/${account(devnet, 'outsider').address}`))
        .status,
    ).toBe(404);
    expect((await get('/productscience/inference/inference/participant')).body.participant).toHaveLength(4);
    const group = (
      await get(
        `/productscience/inference/inference/epoch_group_data/0?model_id=${encodeURIComponent(QWEN_MODEL)}`,
      )
    ).body;
    expect(group.epoch_group_data.validation_weights).toHaveLength(4);
    expect(group.epoch_group_data.model_snapshot.validation_threshold).toEqual({
      value: '970',
      exponent: -3,
    });
  });

  it('serves warm-key grantees for MsgStartInference, escaped or literal', async () => {
    const host = devnet.participants[2]!;
    const base = `/productscience/inference/inference/grantees_by_message_type/${host.address}`;
    for (const path of [
      `${base}/%2Finference.inference.MsgStartInference`,
      `${base}//inference.inference.MsgStartInference`,
    ]) {
      expect((await get(path)).body.grantees).toEqual([{ address: host.warmKey.address, pub_key: '' }]);
    }
    expect((await get(`${base}/${encodeURIComponent(MSG_SETTLE_DEVSHARD_ESCROW)}`)).body.grantees).toEqual(
      [],
    );
  });

  it('serves the cosmos authz grants of a granter (the warm keys the gateway reads)', async () => {
    const host = devnet.participants[2]!;
    const { status, body } = await get(`/cosmos/authz/v1beta1/grants/granter/${host.address}`);
    expect(status).toBe(200);
    expect(body.grants).toEqual([
      {
        granter: host.address,
        grantee: host.warmKey.address,
        authorization: {
          '@type': '/cosmos.authz.v1beta1.GenericAuthorization',
          msg: '/inference.inference.MsgStartInference',
        },
        expiration: null,
      },
    ]);
    expect((await get('/cosmos/authz/v1beta1/grants/granter/not-an-address')).status).toBe(400);
  });

  it('answers 404 for an unknown tx hash, then the indexed tx; simulates gas', async () => {
    const txs = new TxFactory(devnet);
    const tx = txs.createEscrow(account(devnet, 'creator-0').key);
    expect((await get(`/cosmos/tx/v1beta1/txs/${tx.txHash}`)).status).toBe(404);
    const sim = await fetch(`${devnet.urls.chainRest}/cosmos/tx/v1beta1/simulate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tx_bytes: Buffer.from(tx.txBytes).toString('base64') }),
    });
    expect(((await sim.json()) as JsonBody).gas_info.gas_used).toMatch(/^[1-9][0-9]*$/);
    await broadcast(devnet, tx);
    devnet.blocks.step();
    const { status, body } = await get(`/cosmos/tx/v1beta1/txs/${tx.txHash.toLowerCase()}`);
    expect(status).toBe(200);
    expect(body.tx_response).toMatchObject({
      code: 0,
      codespace: '',
      txhash: tx.txHash,
      height: devnet.blocks.height.toString(),
      logs: [],
    });
    expect(
      body.tx_response.events.find((e: { type: string }) => e.type === 'devshard_escrow_created'),
    ).toBeDefined();
  });
});
