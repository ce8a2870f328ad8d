import { MSG_SETTLE_DEVSHARD_ESCROW, type MsgSettleDevshardEscrow, PrivateKey } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import {
  account,
  broadcast,
  buildSettlement,
  CREATE_FEE,
  createEscrow,
  deliver,
  type SettlementInput,
  snapshot,
  startTestDevnet,
  TxFactory,
} from '../testing/test-devnet.js';
import { moduleAddress } from './bank.js';
import type { EscrowRow } from './stores.js';

const AMOUNT = 10_000_000_000n;
const NONCE = 100n;
// create fee + 90 paid nonces, plus 7 so that fees mod 16 = 7 (the first 7 entries get +1).
const FEES = 10_000n + 90n * 1_000n + 7n;
const COSTS = Array.from({ length: 16 }, (_, i) => 1_000_000n * BigInt(i + 1));

/** The payout split of §2.6, computed independently of the devnet's code. */
function expectedPayouts(escrow: EscrowRow, costs: bigint[], fees: bigint): Map<string, bigint> {
  const share = fees / 16n;
  const out = new Map<string, bigint>();
  escrow.slots.forEach((address, slot) => {
    const extra = BigInt(slot) < fees % 16n ? 1n : 0n;
    out.set(address, (out.get(address) ?? 0n) + costs[slot]! + share + extra);
  });
  return out;
}

describe('MsgSettleDevshardEscrow: payout', () => {
  let devnet: Devnet;
  let txs: TxFactory;

  beforeAll(async () => {
    devnet = await startTestDevnet({
      epoch: {
        epochLength: 40,
        pocStageDuration: 4,
        pocValidationDelay: 1,
        pocValidationDuration: 2,
        setNewValidatorsDelay: 1,
      },
    });
    txs = new TxFactory(devnet);
  });
  afterAll(() => devnet.close());

  it('settles with 11 of 16 slot signatures (one via a warm key) and pays every ngonka as §2.6 says', async () => {
    const creator = account(devnet, 'creator-0');
    const escrow = await createEscrow(devnet, txs, creator, AMOUNT);
    const before = snapshot(devnet);
    const hostStats = escrow.slots.map((_, slotId) => ({
      slotId,
      missed: slotId === 3 ? 1 : 0,
      invalid: slotId === 4 ? 1 : 0,
      cost: COSTS[slotId]!,
      requiredValidations: 2,
      completedValidations: 1,
    }));
    const warmSlot = 2;
    const msg = buildSettlement(devnet, escrow, {
      nonce: NONCE,
      fees: FEES,
      hostStats,
      signSlots: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      signerFor: (slot, address) => {
        const host = devnet.participants.find((p) => p.address === address)!;
        return slot === warmSlot ? host.warmKey : host.key;
      },
    });
    const tx = await deliver(devnet, txs.settle(creator.key, msg));
    expect(tx.raw_log).toBe('');
    expect(tx.code).toBe(0);

    const payouts = expectedPayouts(escrow, COSTS, FEES);
    const total = [...payouts.values()].reduce((a, b) => a + b, 0n);
    expect(total).toBe(COSTS.reduce((a, b) => a + b, 0n) + FEES);
    const remainder = AMOUNT - total;
    const settled = Object.fromEntries(
      tx.events.find((e) => e.type === 'devshard_escrow_settled')!.attributes.map((a) => [a.key, a.value]),
    );
    expect(settled).toMatchObject({
      escrow_id: escrow.id.toString(),
      state_root_and_protocol_version: 'v5',
      settler: creator.address,
      total_payout: total.toString(),
      fees: FEES.toString(),
      remainder: remainder.toString(),
    });

    // Every balance, to the last ngonka. Same epoch: validators are credited to their epoch balance
    // and the coins stay in the inference module; the creator gets the remainder; settle is fee-exempt.
    const after = snapshot(devnet);
    const expected = structuredClone(before);
    expected[creator.address]!.bank += remainder;
    expected[moduleAddress('inference')]!.bank -= remainder;
    for (const [address, payout] of payouts) expected[address]!.epoch += payout;
    expect(after).toEqual(expected);
    expect(devnet.chain.escrow(escrow.id)!.settled).toBe(true);
  });

  it('pays validators to their bank balance when settled in the next epoch', async () => {
    const creator = account(devnet, 'creator-1');
    const preCreate = snapshot(devnet);
    const escrow = await createEscrow(devnet, txs, creator, AMOUNT);
    devnet.epochs.advanceTo(escrow.epochIndex + 1n);
    const before = snapshot(devnet);
    const costs = COSTS.map((c) => c * 2n);
    const tx = await deliver(
      devnet,
      txs.settle(creator.key, buildSettlement(devnet, escrow, { nonce: NONCE, fees: FEES, costs })),
    );
    expect(tx.code).toBe(0);
    const payouts = expectedPayouts(escrow, costs, FEES);
    const total = [...payouts.values()].reduce((a, b) => a + b, 0n);
    const expected = structuredClone(before);
    expected[creator.address]!.bank += AMOUNT - total;
    expected[moduleAddress('inference')]!.bank -= AMOUNT;
    for (const [address, payout] of payouts) expected[address]!.bank += payout;
    expect(snapshot(devnet)).toEqual(expected);
    // Across create + settle the creator paid exactly fee + Σcost + fees; the module is back where it was.
    expect(devnet.chain.balanceOf(creator.address)).toBe(
      preCreate[creator.address]!.bank - CREATE_FEE - total,
    );
    expect(devnet.chain.balanceOf(moduleAddress('inference'))).toBe(
      preCreate[moduleAddress('inference')]!.bank,
    );
  });

  it('settles a session tagged v4 (approved_versions holds v5 and v4)', async () => {
    expect(devnet.chain.params().devshardEscrow.approvedVersions.map((v) => v.name)).toEqual(['v5', 'v4']);
    const creator = account(devnet, 'creator-2');
    const escrow = await createEscrow(devnet, txs, creator, AMOUNT);
    const msg = buildSettlement(devnet, escrow, { nonce: NONCE, fees: FEES, version: 'v4' });
    expect((await deliver(devnet, txs.settle(creator.key, msg))).code).toBe(0);
  });

  it('sends an excluded validator share to the governance module', async () => {
    const creator = account(devnet, 'creator-2');
    const escrow = await createEscrow(devnet, txs, creator, AMOUNT);
    const excluded = escrow.slots[0]!;
    devnet.faults.set({ excludedParticipants: [excluded] });
    const before = snapshot(devnet);
    const tx = await deliver(
      devnet,
      txs.settle(creator.key, buildSettlement(devnet, escrow, { nonce: NONCE, fees: FEES, costs: COSTS })),
    );
    devnet.faults.clear();
    expect(tx.code).toBe(0);
    const payouts = expectedPayouts(escrow, COSTS, FEES);
    const total = [...payouts.values()].reduce((a, b) => a + b, 0n);
    const expected = structuredClone(before);
    expected[creator.address]!.bank += AMOUNT - total;
    expected[moduleAddress('inference')]!.bank -= AMOUNT - total + payouts.get(excluded)!;
    expected[moduleAddress('gov')]!.bank += payouts.get(excluded)!;
    for (const [address, payout] of payouts) if (address !== excluded) expected[address]!.epoch += payout;
    expect(snapshot(devnet)).toEqual(expected);
  });
});

describe('MsgSettleDevshardEscrow: rejections change nothing', () => {
  let devnet: Devnet;
  let txs: TxFactory;
  let escrow: EscrowRow;
  const creatorName = 'creator-0';

  beforeAll(async () => {
    devnet = await startTestDevnet({
      epoch: {
        epochLength: 40,
        pocStageDuration: 4,
        pocValidationDelay: 1,
        pocValidationDuration: 2,
        setNewValidatorsDelay: 1,
      },
    });
    txs = new TxFactory(devnet);
    escrow = await createEscrow(devnet, txs, account(devnet, creatorName), AMOUNT);
  });
  afterAll(() => devnet.close());

  const payload = (input: Partial<SettlementInput> = {}) =>
    buildSettlement(devnet, escrow, { nonce: NONCE, fees: FEES, costs: COSTS, ...input });

  async function expectRejected(
    msg: MsgSettleDevshardEscrow,
    code: number,
    log: RegExp,
    opts: { signer?: PrivateKey; fee?: bigint; codespace?: string } = {},
  ) {
    const before = snapshot(devnet);
    const signer = opts.signer ?? account(devnet, creatorName).key;
    const { txResponse } = await broadcast(
      devnet,
      txs.settle(signer, msg, opts.fee === undefined ? {} : { fee: opts.fee }),
    );
    expect({ code: txResponse.code, codespace: txResponse.codespace, log: txResponse.raw_log }).toMatchObject(
      {
        code,
        codespace: opts.codespace ?? 'inference',
        log: expect.stringMatching(log),
      },
    );
    devnet.blocks.step();
    expect(snapshot(devnet)).toEqual(before);
    expect(devnet.chain.escrow(escrow.id)!.settled).toBe(false);
  }

  it('rejects a settler that is not the creator', async () => {
    const other = account(devnet, 'creator-1').key;
    await expectRejected({ ...payload(), settler: other.address }, 1176, /is not the escrow creator/, {
      signer: other,
    });
  });

  it('rejects a settler outside the allowlist: no fee exemption (13), then the allowlist (1170)', async () => {
    const outsider = account(devnet, 'outsider').key;
    const msg = { ...payload(), settler: outsider.address };
    await expectRejected(msg, 13, /insufficient fees/, { signer: outsider, codespace: 'sdk' });
    await expectRejected(msg, 1170, /allowlist/, { signer: outsider, fee: 4_000_000n });
  });

  it('prices a settlement that an enabled fee group lists: the allowlisted settler then pays (13 without it)', async () => {
    const original = devnet.chain.params().fee;
    devnet.chain.updateParams((p) => {
      p.fee.groups.push({ name: 'devshard', minGasPrice: 3n, typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW] });
      p.fee.enabledFeeGroups.push('devshard');
    });
    try {
      await expectRejected(payload(), 13, /insufficient fees; got: 0ngonka required: \d+ngonka/, {
        codespace: 'sdk',
      });
    } finally {
      devnet.chain.updateParams((p) => {
        p.fee = original;
      });
    }
  });

  it('rejects too few signatures (10 of 16, quorum 11)', async () => {
    await expectRejected(
      payload({ signSlots: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] }),
      1178,
      /insufficient quorum: 10 slot votes, need 11/,
    );
  });

  it('rejects a forged signature and a warm key without a grant', async () => {
    const forger = PrivateKey.random();
    await expectRejected(
      payload({ signerFor: (slot, a) => (slot === 5 ? forger : keyOf(a)) }),
      1177,
      /signature for slot 5 recovered .* expected/,
    );
    const other = devnet.participants.find((p) => p.address !== escrow.slots[5])!;
    await expectRejected(
      payload({ signerFor: (slot, a) => (slot === 5 ? other.warmKey : keyOf(a)) }),
      1177,
      /slot 5 recovered/,
    );
  });

  it('rejects duplicate slots and signatures that are not 65 bytes', async () => {
    const msg = payload();
    await expectRejected(
      { ...msg, signatures: [...msg.signatures, msg.signatures[0]!] },
      1177,
      /duplicate signature for slot 0/,
    );
    const short = msg.signatures.map((s, i) =>
      i === 0 ? { ...s, signature: s.signature.subarray(0, 64) } : s,
    );
    await expectRejected({ ...msg, signatures: short }, 1177, /must be 65 bytes/);
    const outOfRange = msg.signatures.map((s, i) => (i === 0 ? { ...s, slotId: 16 } : s));
    await expectRejected({ ...msg, signatures: outOfRange }, 1177, /slot_id 16 out of range/);
  });

  it('rejects Σcost + fees > amount', async () => {
    const costs = COSTS.map((c, i) =>
      i === 0 ? AMOUNT - FEES - (COSTS.reduce((a, b) => a + b, 0n) - c) + 1n : c,
    );
    await expectRejected(payload({ costs }), 1176, /exceeds escrow amount/);
  });

  it('rejects a wrong state root', async () => {
    const msg = payload();
    const root = Uint8Array.from(msg.stateRoot);
    root[0] = root[0]! ^ 0xff;
    await expectRejected({ ...msg, stateRoot: root }, 1176, /state_root mismatch/);
    // Fields changed after signing: the recomputed root no longer matches.
    await expectRejected({ ...msg, fees: msg.fees - 1n }, 1176, /state_root mismatch/);
    await expectRejected(
      { ...msg, stateRoot: msg.stateRoot.subarray(0, 31) },
      1176,
      /state_root must be 32 bytes/,
    );
  });

  it('rejects a version that is empty, too long or not approved', async () => {
    await expectRejected(
      payload({ version: 'v3' }),
      1176,
      /"v3" is not listed in devshard_escrow_params.approved_versions/,
    );
    await expectRejected({ ...payload(), version: '' }, 1176, /version is required/);
    await expectRejected(payload({ version: 'v'.repeat(129) }), 1176, /maximum length of 128/);
  });

  it('rejects a nonce above max_nonce and per-slot bounds above the assigned count', async () => {
    await expectRejected(payload({ nonce: 1_000_001n }), 1176, /nonce 1000001 exceeds maximum 1000000/);
    const stats = (missed: number, invalid: number) =>
      escrow.slots.map((_, slotId) => ({
        slotId,
        missed: slotId === 1 ? missed : 0,
        invalid: slotId === 1 ? invalid : 0,
        cost: 0n,
        requiredValidations: 0,
        completedValidations: 0,
      }));
    // nonce 100, S = 16: slot 1 could have had 1 + ⌊99/16⌋ = 7 inferences.
    await expectRejected(
      payload({ hostStats: stats(8, 0) }),
      1176,
      /slot 1 missed count 8 exceeds assigned per slot 7/,
    );
    await expectRejected(
      payload({ hostStats: stats(3, 5) }),
      1176,
      /slot 1 invalid count 5 exceeds completed per slot 4/,
    );
    const slot0 = escrow.slots.map((_, slotId) => ({
      slotId,
      missed: slotId === 0 ? 1 : 0,
      invalid: 0,
      cost: 0n,
      requiredValidations: 0,
      completedValidations: 0,
    }));
    await expectRejected(
      payload({ nonce: 15n, hostStats: slot0 }),
      1176,
      /slot 0 missed count 1 exceeds assigned per slot 0/,
    );
  });

  it('rejects duplicate host_stats slots and unallocated remainder fees', async () => {
    const dup = [0, 0, ...Array.from({ length: 14 }, (_, i) => i + 2)].map((slotId) => ({
      slotId,
      missed: 0,
      invalid: 0,
      cost: 0n,
      requiredValidations: 0,
      completedValidations: 0,
    }));
    await expectRejected(payload({ hostStats: dup }), 1176, /duplicate host_stats slot_id 0/);
    const few = [0, 1, 2].map((slotId) => ({
      slotId,
      missed: 0,
      invalid: 0,
      cost: 0n,
      requiredValidations: 0,
      completedValidations: 0,
    }));
    await expectRejected(payload({ hostStats: few }), 1176, /failed to allocate all remainder fees, 4 left/);
  });

  it('rejects an unknown escrow id', async () => {
    await expectRejected({ ...payload(), escrowId: 999n }, 1174, /escrow 999 not found/);
  });

  it('rejects settlement after the epoch following the escrow epoch, then a second settlement', async () => {
    devnet.epochs.advanceTo(escrow.epochIndex + 2n);
    await expectRejected(payload(), 1179, /current epoch 2, escrow epoch 0/);
    const fresh = await createEscrow(devnet, txs, account(devnet, creatorName), AMOUNT);
    const ok = buildSettlement(devnet, fresh, { nonce: NONCE, fees: FEES });
    expect((await deliver(devnet, txs.settle(account(devnet, creatorName).key, ok))).code).toBe(0);
    const again = await broadcast(devnet, txs.settle(account(devnet, creatorName).key, ok));
    expect(again.txResponse).toMatchObject({ code: 1175, codespace: 'inference' });
  });

  function keyOf(address: string): PrivateKey {
    return devnet.participants.find((p) => p.address === address)!.key;
  }
});
