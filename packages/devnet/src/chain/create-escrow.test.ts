import { PrivateKey } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { MINIMAX_MODEL, QWEN_MODEL } from '../genesis.js';
import {
  account,
  attribute,
  broadcast,
  CREATE_FEE,
  deliver,
  snapshot,
  startTestDevnet,
  TxFactory,
} from '../testing/test-devnet.js';
import { moduleAddress } from './bank.js';

// chain-and-network.md §2.6 "Create": each keeper rule, accepted and rejected; a rejection changes nothing.
describe('MsgCreateDevshardEscrow', () => {
  let devnet: Devnet;
  let txs: TxFactory;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    txs = new TxFactory(devnet);
  });
  afterAll(() => devnet.close());

  async function expectRejected(tx: Uint8Array, code: number, log: RegExp, codespace = 'inference') {
    const before = snapshot(devnet);
    const last = devnet.chain.lastEscrowId();
    const { txResponse } = await broadcast(devnet, tx);
    expect({ code: txResponse.code, codespace: txResponse.codespace }).toEqual({ code, codespace });
    expect(txResponse.raw_log).toMatch(log);
    devnet.blocks.step();
    expect(snapshot(devnet)).toEqual(before);
    expect(devnet.chain.lastEscrowId()).toBe(last);
  }

  it('locks the amount, draws 16 weighted slots, freezes params on the row and emits the event', async () => {
    const creator = account(devnet, 'creator-0');
    const module = moduleAddress('inference');
    const feeCollector = moduleAddress('fee_collector');
    const before = snapshot(devnet);
    const tx = await deliver(devnet, txs.createEscrow(creator.key, 7_000_000_000n));
    expect(tx.code).toBe(0);
    const id = attribute(tx, 'devshard_escrow_created', 'escrow_id')!;
    expect(
      Object.fromEntries(
        tx.events.find((e) => e.type === 'devshard_escrow_created')!.attributes.map((a) => [a.key, a.value]),
      ),
    ).toEqual({
      escrow_id: id,
      creator: creator.address,
      amount: '7000000000',
      epoch_index: '0',
      model_id: QWEN_MODEL,
      msg_index: '0',
    });
    const row = devnet.chain.escrow(BigInt(id))!;
    const p = devnet.chain.params().devshardEscrow;
    expect(row).toMatchObject({
      creator: creator.address,
      amount: 7_000_000_000n,
      epochIndex: 0n,
      settled: false,
      tokenPrice: p.tokenPrice,
      createDevshardFee: p.createDevshardFee,
      feePerNonce: p.feePerNonce,
      maxNonce: Number(p.maxNonce),
      refusalTimeout: p.refusalTimeout,
      executionTimeout: p.executionTimeout,
      validationRate: p.validationRate,
      voteThresholdFactor: p.voteThresholdFactor,
      inferenceSealGraceNonces: Number(p.sealGraceNonces),
    });
    expect(row.appHash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.slots).toHaveLength(16);
    const hosts = new Set(devnet.participants.map((x) => x.address));
    expect(row.slots.every((s) => hosts.has(s))).toBe(true);
    expect(new Set(row.slots).size).toBeLessThan(16); // several slots per validator
    expect(devnet.chain.balanceOf(creator.address)).toBe(
      before[creator.address]!.bank - 7_000_000_000n - CREATE_FEE,
    );
    expect(devnet.chain.balanceOf(module)).toBe(before[module]!.bank + 7_000_000_000n);
    expect(devnet.chain.balanceOf(feeCollector)).toBe(before[feeCollector]!.bank + CREATE_FEE);

    // Frozen: a later params change does not touch the row.
    devnet.chain.updateParams((q) => {
      q.devshardEscrow.tokenPrice = 7n;
      q.devshardEscrow.feePerNonce = 9n;
    });
    expect(devnet.chain.escrow(BigInt(id))!.tokenPrice).toBe(p.tokenPrice);
    expect(devnet.chain.escrow(BigInt(id))!.feePerNonce).toBe(p.feePerNonce);
    devnet.chain.updateParams((q) => {
      q.devshardEscrow.tokenPrice = p.tokenPrice;
      q.devshardEscrow.feePerNonce = p.feePerNonce;
    });
  });

  it('draws slots only from validators of the model epoch group', async () => {
    const row = devnet.chain.escrow(
      BigInt(
        attribute(
          await deliver(
            devnet,
            txs.createEscrow(account(devnet, 'creator-1').key, 5_000_000_000n, MINIMAX_MODEL),
          ),
          'devshard_escrow_created',
          'escrow_id',
        )!,
      ),
    )!;
    const host3 = devnet.participants.find((p) => p.name === 'host-3')!.address;
    expect(row.slots).toHaveLength(16);
    expect(row.slots).not.toContain(host3);
  });

  it('serves the row at the escrow query with 64-bit integers as strings', async () => {
    const id = devnet.chain.lastEscrowId();
    const res = await fetch(
      `${devnet.urls.chainRest}/productscience/inference/inference/devshard_escrow/${id}`,
    );
    const body = (await res.json()) as { escrow: Record<string, unknown>; found: boolean };
    expect(body.found).toBe(true);
    expect(body.escrow).toMatchObject({
      id: id.toString(),
      amount: '5000000000',
      token_price: '1',
      max_nonce: 1_000_000,
      refusal_timeout: '60',
      validation_rate: 1000,
    });
    const missing = (await (
      await fetch(`${devnet.urls.chainRest}/productscience/inference/inference/devshard_escrow/999`)
    ).json()) as { found: boolean; escrow: { id: string } };
    expect(missing).toMatchObject({ found: false, escrow: { id: '0' } });
  });

  it('rejects a creator outside the allowlist', async () => {
    await expectRejected(txs.createEscrow(account(devnet, 'outsider').key).txBytes, 1170, /allowlist/);
  });

  it('rejects an empty model id', async () => {
    await expectRejected(
      txs.createEscrow(account(devnet, 'creator-0').key, 5_000_000_000n, '').txBytes,
      1171,
      /model_id is required/,
    );
  });

  it('rejects an amount below min_amount and above max_amount', async () => {
    const key = account(devnet, 'creator-0').key;
    await expectRejected(
      txs.createEscrow(key, 4_999_999_999n).txBytes,
      1171,
      /out of range \[5000000000, 10000000000\]/,
    );
    await expectRejected(txs.createEscrow(key, 10_000_000_001n).txBytes, 1171, /out of range/);
  });

  it('rejects a model with no epoch group', async () => {
    await expectRejected(
      txs.createEscrow(account(devnet, 'creator-0').key, 5_000_000_000n, 'no/such-model').txBytes,
      1173,
      /no validation weights/,
    );
  });

  it('rejects creation once the epoch holds max_escrows_per_epoch escrows', async () => {
    const created = Number(devnet.chain.lastEscrowId());
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.maxEscrowsPerEpoch = BigInt(created);
    });
    await expectRejected(
      txs.createEscrow(account(devnet, 'creator-0').key).txBytes,
      1172,
      new RegExp(`already has ${created} escrows \\(max ${created}\\)`),
    );
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.maxEscrowsPerEpoch = 100n;
    });
  });

  it('rejects when spendable does not cover amount + fee', async () => {
    const poor = PrivateKey.random();
    devnet.chain.fund(poor.address, 5_000_000_000n + CREATE_FEE - 1n);
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.allowedCreatorAddresses.push(poor.address);
    });
    await expectRejected(
      txs.createEscrow(poor).txBytes,
      5,
      /failed to lock funds.*insufficient funds/,
      'sdk',
    );
  });
});
