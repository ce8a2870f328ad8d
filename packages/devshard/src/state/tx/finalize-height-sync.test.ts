import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { SessionPhase } from '../../hash/root-formula.js';
import { encodeTx } from '../../proto/devshard-tx.js';
import { newMsg, txOf } from '../../proto/tx-builders.js';
import { signDiff } from '../../signing/diff.js';
import { signHeightAck } from '../../signing/height-ack.js';
import { expectRejected, run } from '../../testing/drive.js';
import { confirmTx, finishTx, makeFixture, startTx } from '../../testing/session-fixture.js';
import { applyDiff } from '../apply-diff.js';

describe('FinalizeRound and RevealSeed (§5.4)', () => {
  it('moves Active to Finalizing once', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[txOf.finalizeRound()]]);
    expect(s.phase).toBe(SessionPhase.Finalizing);
    expect(s.finalizeNonce).toBe(1n);
    expectRejected(f, s, [txOf.finalizeRound()], DevshardErrorCode.AlreadyFinalizing);
  });

  it('accepts RevealSeed as a no-op', () => {
    const f = makeFixture({ tag: 'v5' });
    const reveal = encodeTx({
      kind: 'revealSeed',
      msg: { slotId: 1, signature: Uint8Array.of(1), proposerSig: new Uint8Array(0), escrowId: '' },
    });
    const s = run(f, [[reveal]]);
    const empty = run(f, [[]]);
    expect(s.root).toEqual(empty.root);
  });

  it('refuses an empty wrapper', () => {
    const f = makeFixture({ tag: 'v5' });
    expectRejected(f, f.state, [encodeTx({ kind: 'none' })], DevshardErrorCode.EmptyTx);
  });
});

describe('height-sync framing (§9 L1–L3, §12 #4)', () => {
  const heartbeat = (turnSeq: bigint, slotsNum = 5n) =>
    txOf.heartbeat(newMsg.heartbeat({ turnSeq, slotsNum }));

  it('accepts a well-framed heartbeat while Active and remembers its turn', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[heartbeat(1n)]]);
    expect(s.heightSyncLog.heartbeatTurns.get(1n)).toBe(1n);
    expectRejected(f, s, [heartbeat(0n)], DevshardErrorCode.BadFraming);
    expectRejected(f, s, [heartbeat(2n, 4n)], DevshardErrorCode.BadFraming);
    const later = run(f, [[heartbeat(3n)]], {}, s);
    expectRejected(f, later, [heartbeat(2n)], DevshardErrorCode.BadFraming);
  });

  it('accepts a signed ack of a logged heartbeat and refuses bad ones', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[heartbeat(1n)]]);
    const ack = (fields: Partial<Parameters<typeof newMsg.heightAck>[0]>, signer = f.hosts[2]!) =>
      txOf.heightAck(
        signHeightAck(
          signer,
          newMsg.heightAck({
            turnSeq: 1n,
            refNonce: 1n,
            slotId: 2,
            peerSeen: Uint8Array.of(0x1f),
            ...fields,
          }),
        ),
      );
    expect(run(f, [[ack({})]], {}, s).latestNonce).toBe(2n);
    expectRejected(f, s, [ack({ peerSeen: Uint8Array.of(1, 2) })], DevshardErrorCode.BadFraming);
    expectRejected(f, s, [ack({ slotId: 5 })], DevshardErrorCode.BadFraming);
    expectRejected(f, s, [ack({}, f.hosts[3])], DevshardErrorCode.AckSigInvalid);
    expectRejected(f, s, [ack({ refNonce: 2n })], DevshardErrorCode.AckCausality);
    expectRejected(f, s, [ack({ turnSeq: 2n })], DevshardErrorCode.AckCausality);
    // The gateway never heartbeats, so a mempool ack is dropped and the diff still goes out.
    expect(() =>
      applyDiff(
        f.state,
        signDiff(f.user, f.escrowId, { nonce: 1n, txs: [ack({})], postStateRoot: new Uint8Array(0) }),
      ),
    ).toThrow(expect.objectContaining({ code: DevshardErrorCode.AckCausality }));
  });

  it('refuses heartbeats after finalize, and forced turns altogether', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[txOf.finalizeRound()]]);
    expectRejected(f, s, [heartbeat(1n)], DevshardErrorCode.SessionFinalizing);
    const force = (
      fields: Partial<{ triggerNonce: bigint; endNonce: bigint; anchorK: bigint; slotsNum: bigint }>,
    ) =>
      encodeTx({
        kind: 'forceHeightSyncTurn',
        msg: { triggerNonce: 1n, endNonce: 5n, anchorK: 5n, slotsNum: 5n, reason: '', ...fields },
      });
    expectRejected(f, f.state, [force({})], DevshardErrorCode.Unsupported);
    expectRejected(f, f.state, [force({ triggerNonce: 2n })], DevshardErrorCode.InvalidNonce);
    expectRejected(f, f.state, [force({ slotsNum: 4n })], DevshardErrorCode.InvalidForceHeightSyncTurn);
    expectRejected(f, f.state, [force({ anchorK: 4n })], DevshardErrorCode.InvalidForceHeightSyncTurn);
    expectRejected(f, f.state, [force({ endNonce: 6n })], DevshardErrorCode.InvalidForceHeightSyncTurn);
    expectRejected(f, f.state, [force({}), force({})], DevshardErrorCode.MultipleForceHeightSyncTurn);
  });

  it('L0b: a stamped finish below its stamped confirm in the same diff is refused', async () => {
    const { signExecutorReceipt } = await import('../../signing/executor-receipt.js');
    const { signFinish } = await import('../../signing/proposer.js');
    const { PROMPT_HASH, RESPONSE_HASH } = await import('../../testing/session-fixture.js');
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)]]);
    const content = {
      inferenceId: 1n,
      promptHash: PROMPT_HASH,
      model: 'llama',
      inputLength: 100n,
      maxTokens: 50n,
      startedAt: 1000n,
      escrowId: f.escrowId,
      confirmedAt: 1000n,
      observedHeight: 50n,
      observedBlockHash: Uint8Array.of(1),
    };
    const confirm = txOf.confirmStart(
      newMsg.confirmStart({ ...content, executorSig: signExecutorReceipt(f.hosts[1]!, content) }),
    );
    const finish = (height: bigint) =>
      txOf.finishInference(
        signFinish(
          f.hosts[1]!,
          newMsg.finishInference({
            inferenceId: 1n,
            responseHash: RESPONSE_HASH,
            executorSlot: 1,
            escrowId: f.escrowId,
            observedHeight: height,
            observedBlockHash: Uint8Array.of(2),
          }),
        ),
      );
    expect(run(f, [[confirm, finish(50n)]], {}, s).inferences.get(1n)!.status).toBe(2);
    expectRejected(f, s, [confirm, finish(49n)], DevshardErrorCode.HeightRegression);
    // An unstamped finish is not compared.
    expect(run(f, [[confirm, finishTx(f, 1n)]], {}, s).latestNonce).toBe(2n);
    void confirmTx;
  });
});
