import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { txOf } from '../../proto/tx-builders.js';
import { expectRejected, run } from '../../testing/drive.js';
import {
  confirmTx,
  finishTx,
  makeFixture,
  startTx,
  validationTx,
  voteTx,
} from '../../testing/session-fixture.js';
import { InferenceStatus } from '../types.js';

// Inference 1 runs on slot 1; threshold 1.
function finished() {
  const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 100n } });
  return { f, s: run(f, [[startTx(1n)], [confirmTx(f, 1n)], [finishTx(f, 1n)]]) };
}

describe('Validation (§5.4)', () => {
  it('a valid validation tallies weight and sets the validator bit', () => {
    const { f, s } = finished();
    const v = run(f, [[validationTx(f, 1n, 0, true)]], {}, s).inferences.get(1n)!;
    expect(v.status).toBe(InferenceStatus.Finished);
    expect(v.votesValid).toBe(1);
    expect(v.validatedBy).toBe(1n);
  });

  it('an invalid validation challenges', () => {
    const { f, s } = finished();
    const v = run(f, [[validationTx(f, 1n, 0, false)]], {}, s).inferences.get(1n)!;
    expect(v.status).toBe(InferenceStatus.Challenged);
    expect(v.votesInvalid).toBe(1);
  });

  it('a repeat from the same address is a no-op, even with a bad signature', () => {
    const { f, s } = finished();
    const once = run(f, [[validationTx(f, 1n, 0, true)]], {}, s);
    const twice = run(f, [[validationTx(f, 1n, 0, false, { signer: f.hosts[4] })]], {}, once);
    expect(twice.inferences.get(1n)).toEqual(once.inferences.get(1n));
  });

  it('rejects self validation, slots outside the group, early validation, bad signatures and other escrows', () => {
    const { f, s } = finished();
    expectRejected(f, s, [validationTx(f, 1n, 1, true)], DevshardErrorCode.SelfValidation);
    expectRejected(
      f,
      s,
      [validationTx(f, 1n, 9, true, { signer: f.hosts[0] })],
      DevshardErrorCode.SlotNotInGroup,
    );
    expectRejected(
      f,
      s,
      [validationTx(f, 1n, 0, true, { signer: f.hosts[2] })],
      DevshardErrorCode.InvalidProposerSig,
    );
    expectRejected(f, s, [validationTx(f, 7n, 0, true)], DevshardErrorCode.InferenceNotFound);
    const g = makeFixture({ tag: 'v5' });
    const started = run(g, [[startTx(1n)], [confirmTx(g, 1n)]]);
    expectRejected(g, started, [validationTx(g, 1n, 0, true)], DevshardErrorCode.InvalidTransition);
  });

  it('rejects an escrow id mismatch under a valid signature', async () => {
    const { signValidation } = await import('../../signing/proposer.js');
    const { newMsg } = await import('../../proto/tx-builders.js');
    const { f, s } = finished();
    const msg = signValidation(
      f.hosts[0]!,
      newMsg.validation({ inferenceId: 1n, validatorSlot: 0, valid: true, escrowId: 'x' }),
    );
    expectRejected(f, s, [txOf.validation(msg)], DevshardErrorCode.EscrowIdMismatch);
  });

  it('rejects a late validation of a sealed inference', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [
      [startTx(1n)],
      [confirmTx(f, 1n)],
      [finishTx(f, 1n)],
      [txOf.finalizeRound()],
      [],
      [],
      [],
      [],
      [],
    ]);
    expect(s.inferences.size).toBe(0);
    expectRejected(f, s, [validationTx(f, 1n, 0, true)], DevshardErrorCode.InferenceSealed);
    expectRejected(f, s, [voteTx(f, 1n, 0, true)], DevshardErrorCode.InferenceSealed);
  });
});

describe('ValidationVote (§5.4)', () => {
  function challenged() {
    const { f, s } = finished();
    return { f, s: run(f, [[validationTx(f, 1n, 0, false)]], {}, s) };
  }

  it('invalidates above the threshold: executor invalid, payment refunded', () => {
    const { f, s } = challenged();
    const v = run(f, [[voteTx(f, 1n, 2, false)]], {}, s);
    const rec = v.inferences.get(1n)!;
    expect(rec.status).toBe(InferenceStatus.Invalidated);
    expect(rec.votesInvalid).toBe(2);
    expect(v.hostStats[1]).toMatchObject({ invalid: 1, cost: 0n });
    expect(v.balance).toBe(1_000_000n);
  });

  it('validates above the threshold and ignores later votes', () => {
    const { f, s } = challenged();
    const v = run(f, [[voteTx(f, 1n, 2, true)], [voteTx(f, 1n, 3, true)]], {}, s);
    expect(v.inferences.get(1n)!.status).toBe(InferenceStatus.Validated);
    const later = run(f, [[voteTx(f, 1n, 4, false)]], {}, v);
    expect(later.inferences.get(1n)).toEqual(v.inferences.get(1n));
  });

  it('rejects a vote on a record that is not Challenged, a second vote, a bad signature', () => {
    const { f, s } = finished();
    expectRejected(f, s, [voteTx(f, 1n, 2, true)], DevshardErrorCode.InvalidTransition);
    const { f: g, s: c } = challenged();
    expectRejected(g, c, [voteTx(g, 1n, 0, true)], DevshardErrorCode.DuplicateVote);
    expectRejected(
      g,
      c,
      [voteTx(g, 1n, 2, true, { signer: g.hosts[3] })],
      DevshardErrorCode.InvalidProposerSig,
    );
    expectRejected(g, c, [voteTx(g, 1n, 8, true, { signer: g.hosts[3] })], DevshardErrorCode.SlotNotInGroup);
  });

  it('marks every slot of a multi-slot voter and weighs it by its slot count', () => {
    const f = makeFixture({
      tag: 'v5',
      slots: (h) => [h[0]!.address, h[1]!.address, h[2]!.address, h[2]!.address, h[4]!.address],
    });
    const s = run(f, [
      [startTx(1n)],
      [confirmTx(f, 1n)],
      [finishTx(f, 1n)],
      [validationTx(f, 1n, 0, false)],
      [voteTx(f, 1n, 3, false, { signer: f.hosts[2] })],
    ]);
    const rec = s.inferences.get(1n)!;
    expect(rec.status).toBe(InferenceStatus.Invalidated);
    expect(rec.votesInvalid).toBe(3);
    expect(rec.validatedBy).toBe(0b01101n);
  });
});
