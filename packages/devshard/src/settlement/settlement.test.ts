import { decodeMsgSettleDevshardEscrow, encodeMsgSettleDevshardEscrow } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { settlementStateRoot } from '../hash/root-formula.js';
import { parseJsonLossless } from '../json/lossless.js';
import { txOf } from '../proto/tx-builders.js';
import { signStateRoot } from '../signing/state-signature.js';
import { quorumThreshold } from '../state/group.js';
import { run } from '../testing/drive.js';
import { confirmTx, finishTx, keyN, makeFixture, startTx } from '../testing/session-fixture.js';
import { settlementDocument, settlementDocumentJson, settlementMessage } from './document.js';
import { buildSettlementPayload } from './payload.js';
import { hasSettlementQuorum, isHostStateSignature, slotSignatures } from './quorum.js';

// Host 0 owns slots 0 and 2.
function settled() {
  const f = makeFixture({
    tag: 'v5',
    escrowId: '1234',
    slots: (h) => [h[0]!.address, h[1]!.address, h[0]!.address, h[3]!.address, h[4]!.address],
    config: { feePerNonce: 10n, createDevshardFee: 100n },
  });
  const s = run(f, [
    [startTx(1n)],
    [confirmTx(f, 1n)],
    [finishTx(f, 1n)],
    [startTx(4n)],
    [txOf.finalizeRound()],
    [],
    [],
    [],
    [],
    [],
  ]);
  return { f, s };
}

describe('settlement payload (§8.3)', () => {
  it('builds host stats for all slots, rest_hash, fees, tag and nonce whose phase-2 root is the state root', () => {
    const { s } = settled();
    expect(s.phase).toBe(2);
    const p = buildSettlementPayload(s);
    expect(p.nonce).toBe(10n);
    expect(p.fees).toBe(100n + 4n * 10n);
    expect(p.hostStats.map((h) => h.slotId)).toEqual([0, 1, 2, 3, 4]);
    expect(p.hostStats[1]!.cost).toBe(120n);
    expect(p.hostStats[4]!.cost).toBe(150n); // Pending at drain: charged in full
    expect(p.stateRoot).toEqual(s.root);
    expect(settlementStateRoot(p)).toEqual(s.root);
    // Listing every slot makes payout Σcost + fees: the refund is the final balance.
    const payout = p.hostStats.reduce((a, h) => a + h.cost, 0n) + p.fees;
    expect(1_000_000n - payout).toBe(s.balance);
  });

  it('refuses a state that is not in Settlement', () => {
    const f = makeFixture({ tag: 'v5' });
    expect(() => buildSettlementPayload(f.state)).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.NotSettled }),
    );
  });

  it('repeats a multi-slot host signature per slot and counts quorum in slots', () => {
    const { f, s } = settled();
    const sigOf = (i: number) => signStateRoot(f.hosts[i]!, s.root, s.escrowId, s.latestNonce);
    expect(isHostStateSignature(s, f.hosts[0]!.address, s.root, s.latestNonce, sigOf(0))).toBe(true);
    expect(isHostStateSignature(s, f.hosts[0]!.address, s.root, s.latestNonce, sigOf(1))).toBe(false);
    expect(isHostStateSignature(s, f.hosts[0]!.address, s.root, s.latestNonce - 1n, sigOf(0))).toBe(false);
    const warm = keyN(900);
    const warmSig = signStateRoot(warm, s.root, s.escrowId, s.latestNonce);
    const isWarmKey = (cold: string, signer: string) =>
      cold === f.hosts[3]!.address && signer === warm.address;
    expect(isHostStateSignature(s, f.hosts[3]!.address, s.root, s.latestNonce, warmSig, { isWarmKey })).toBe(
      true,
    );

    const byAddress = new Map([
      [f.hosts[0]!.address, sigOf(0)],
      [f.hosts[1]!.address, sigOf(1)],
    ]);
    const sigs = slotSignatures(s, byAddress);
    expect(sigs.map((x) => x.slotId)).toEqual([0, 1, 2]);
    expect(sigs[2]!.signature).toEqual(sigs[0]!.signature);
    expect(quorumThreshold(5)).toBe(4);
    expect(quorumThreshold(16)).toBe(11);
    expect(hasSettlementQuorum(s, sigs)).toBe(false);
    byAddress.set(f.hosts[3]!.address, sigOf(3));
    expect(hasSettlementQuorum(s, slotSignatures(s, byAddress))).toBe(true);
  });

  it('writes the finalize document and the chain message', () => {
    const { f, s } = settled();
    const p = buildSettlementPayload(s);
    const sigs = slotSignatures(
      s,
      new Map([[f.hosts[0]!.address, signStateRoot(f.hosts[0]!, s.root, s.escrowId, s.latestNonce)]]),
    );
    const doc = parseJsonLossless(settlementDocumentJson(p, sigs)) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual([
      'escrow_id',
      'version',
      'state_root',
      'nonce',
      'fees',
      'rest_hash',
      'host_stats',
      'signatures',
    ]);
    expect(doc.escrow_id).toBe('1234');
    expect(doc.version).toBe('v5');
    expect(doc.nonce).toBe(10n);
    expect((doc.host_stats as unknown[])[1]).toEqual({ slot_id: 1n, missed: 0n, invalid: 0n, cost: 120n });
    expect((doc.signatures as unknown[]).length).toBe(2);
    expect(settlementDocument(p, sigs).state_root).toBe(Buffer.from(s.root).toString('base64'));

    const msg = settlementMessage(p, sigs, f.user.address);
    const decoded = decodeMsgSettleDevshardEscrow(encodeMsgSettleDevshardEscrow(msg));
    expect(decoded.escrowId).toBe(1234n);
    expect(decoded.version).toBe('v5');
    expect(
      settlementStateRoot({
        hostStats: decoded.hostStats,
        fees: decoded.fees,
        restHash: decoded.restHash,
        tag: decoded.version,
      }),
    ).toEqual(decoded.stateRoot);
  });
});
