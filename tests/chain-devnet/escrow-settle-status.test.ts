// `gwctl escrow settle-status` against the devnet's epochs (chain-and-network.md §2.6 Settle 9: the
// current epoch must be the escrow's epoch or the next one). The devnet's "current epoch" for that
// rule is the effective epoch, which switches at set_new_validators, not when PoC starts (§3.3).
// A real settlement (library prepareSettleEscrow, slot signatures from the hosts) shows where the
// chain draws the line.
import {
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  findEscrowCreatedEvents,
  findEscrowSettledEvents,
  type InferenceParams,
  type MsgSettleDevshardEscrow,
  queryInferenceParams,
  sha256,
  type TxSigner,
} from '@gonka-gateway/chain';
import { type Devnet, GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { settlementStateRoot, stateSignatureDigest } from '@gonka-gateway/devshard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, clientFor, gwctl, startChainDevnet, UNTIL_INCLUDED } from './harness.js';

let devnet: Devnet;
let client: ChainClient;
let params: InferenceParams;
let signer: TxSigner;
/** Two escrows of epoch 0: one is settled late in its window, the other never. */
let settledId: bigint;
let idleId: bigint;
let createHash: string;

async function createEscrow(): Promise<{ id: bigint; hash: string }> {
  const tx = signer.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, params.fee);
  const outcome = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
  if (outcome.status !== 'included') throw new Error(`setup escrow not included: ${JSON.stringify(outcome)}`);
  return { id: findEscrowCreatedEvents(outcome.events)[0]!.escrowId, hash: tx.txHash };
}

beforeAll(async () => {
  devnet = await startChainDevnet();
  client = clientFor(devnet);
  params = await queryInferenceParams(client);
  signer = await connectTxSigner(client, account(devnet, 'creator-0').key);
  const first = await createEscrow();
  settledId = first.id;
  createHash = first.hash;
  idleId = (await createEscrow()).id;
  devnet.blocks.pause();
});

afterAll(async () => {
  await devnet?.close();
});

const settleStatus = async (id: bigint, extra: string[] = []) => {
  const run = await gwctl(devnet, ['--json', 'escrow', 'settle-status', id.toString(), ...extra]);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
};

/** Steps the paused chain to `height`. */
function stepTo(height: bigint): void {
  devnet.blocks.step(Number(height - devnet.blocks.height));
  expect(devnet.blocks.height).toBe(height);
}

/** A zero-cost settlement signed by every slot's validator, as a gateway builds it. */
function settlement(id: bigint): Omit<MsgSettleDevshardEscrow, 'settler'> {
  const row = devnet.chain.escrow(id)!;
  const hostStats = row.slots.map((_, slotId) => ({
    slotId,
    missed: 0,
    invalid: 0,
    cost: 0n,
    requiredValidations: 0,
    completedValidations: 0,
  }));
  const restHash = sha256(new TextEncoder().encode(`rest of escrow ${id}`));
  const fees = 0n;
  const version = 'v5';
  const nonce = 1n;
  const stateRoot = settlementStateRoot({ hostStats, fees, restHash, tag: version });
  const digest = stateSignatureDigest(stateRoot, id.toString(), nonce);
  const keyOf = (address: string) => devnet.participants.find((p) => p.address === address)!.key;
  return {
    escrowId: id,
    stateRoot,
    nonce,
    restHash,
    hostStats,
    signatures: row.slots.map((address, slotId) => ({
      slotId,
      signature: keyOf(address).signDigest65(digest),
    })),
    fees,
    version,
  };
}

describe('gwctl escrow settle-status', () => {
  it('a fresh escrow: unsettled, window open, settle by the next epoch; --tx shows the tx without a settle event', async () => {
    expect(devnet.chain.escrow(settledId)!.epochIndex).toBe(0n);
    expect(await settleStatus(settledId)).toMatchObject({
      escrow_id: settledId.toString(),
      settled: false,
      epoch_index: '0',
      current_epoch: '0',
      settle_window: 'open',
      settle_by_epoch: '1',
      tx_status: null,
      settled_event: null,
    });
    expect(await settleStatus(settledId, ['--tx', createHash])).toMatchObject({
      tx_status: 'included',
      settled_event: null,
    });
  });

  // BUG (apps/cli/src/commands/escrow.ts, settle-status): "current epoch" is read from
  // /v1/epochs/latest `latest_epoch.index`, which becomes N+1 when the PoC of epoch N+1 starts,
  // while the settle rule's current epoch (the effective epoch) changes only at set_new_validators.
  // During the PoC blocks of epoch escrow+2 the chain still accepts the settlement (next test), but
  // gwctl reports current_epoch escrow+2 and the window "closed".
  it('during the PoC of epoch escrow+2 the window is still open (effective epoch = escrow epoch + 1)', async () => {
    const p = devnet.chain.params().epoch;
    stepTo(p.epochShift + 2n * p.epochLength); // first PoC block of epoch 2
    expect(devnet.epochs.current()).toMatchObject({ latest: 2n, effective: 1n, phase: 'PoCGenerate' });
    expect(await settleStatus(settledId)).toMatchObject({ current_epoch: '1', settle_window: 'open' });
  });

  it('at that height the chain does accept the settlement; settle-status then shows it settled with its event', async () => {
    expect(devnet.epochs.current()).toMatchObject({ latest: 2n, effective: 1n });
    const before = devnet.chain.balanceOf(signer.address);
    const tx = signer.prepareSettleEscrow(settlement(settledId), params.fee);
    const pending = broadcastAndWait(client, tx, UNTIL_INCLUDED);
    while (devnet.core.blocks.mempoolSize === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    devnet.blocks.step(); // still inside the PoC blocks of epoch 2
    expect(devnet.epochs.current().effective).toBe(1n);
    const outcome = await pending;
    if (outcome.status !== 'included') throw new Error(`settlement not included: ${JSON.stringify(outcome)}`);
    const [event] = findEscrowSettledEvents(outcome.events);
    expect(event).toMatchObject({
      escrowId: settledId,
      settler: signer.address,
      totalPayout: 0n,
      fees: 0n,
      remainder: 5n * GNK,
    });
    expect(devnet.chain.escrow(settledId)!.settled).toBe(true);
    // Full refund of the 5 GNK, minus the settlement tx fee.
    expect(devnet.chain.balanceOf(signer.address) - before).toBe(5n * GNK - tx.fee.amount);

    const status = await settleStatus(settledId, ['--tx', tx.txHash]);
    expect(status).toMatchObject({
      settled: true,
      settle_window: 'settled',
      tx_status: 'included',
      settled_event: {
        escrowId: settledId.toString(),
        settler: signer.address,
        remainder: (5n * GNK).toString(),
      },
    });
  });

  it('the window is closed once the effective epoch is two past the escrow epoch', async () => {
    devnet.epochs.advanceTo(2);
    expect(devnet.chain.epoch()).toBe(2n);
    expect(await settleStatus(idleId)).toMatchObject({ current_epoch: '2', settle_window: 'closed' });
  });
});
