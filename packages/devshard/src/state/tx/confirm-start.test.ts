import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { newMsg, txOf } from '../../proto/tx-builders.js';
import { signExecutorReceipt } from '../../signing/executor-receipt.js';
import { expectRejected, run } from '../../testing/drive.js';
import { confirmTx, keyN, makeFixture, PROMPT_HASH, startTx } from '../../testing/session-fixture.js';
import { InferenceStatus } from '../types.js';

describe('ConfirmStart (§5.4)', () => {
  it('moves Pending to Started with the executor receipt', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n, { confirmedAt: 1234n })]]);
    const rec = s.inferences.get(1n)!;
    expect(rec.status).toBe(InferenceStatus.Started);
    expect(rec.confirmedAt).toBe(1234n);
  });

  it('covers the v5 observed fields with the receipt and records confirmed_at_height', () => {
    const f = makeFixture({ tag: 'v5' });
    const s0 = run(f, [[startTx(1n)]]);
    const content = {
      inferenceId: 1n,
      promptHash: PROMPT_HASH,
      model: 'llama',
      inputLength: 100n,
      maxTokens: 50n,
      startedAt: 1000n,
      escrowId: f.escrowId,
      confirmedAt: 1000n,
      observedHeight: 42n,
      observedBlockHash: Uint8Array.of(9, 9),
    };
    const executorSig = signExecutorReceipt(f.hosts[1]!, content);
    const good = txOf.confirmStart(newMsg.confirmStart({ ...content, executorSig }));
    expect(run(f, [[good]], {}, s0).inferences.get(1n)!.confirmedAtHeight).toBe(42n);
    // Dropping the observed fields (§10 item 4) breaks the executor signature everywhere.
    const dropped = txOf.confirmStart(
      newMsg.confirmStart({ inferenceId: 1n, executorSig, confirmedAt: 1000n }),
    );
    expectRejected(f, s0, [dropped], DevshardErrorCode.InvalidExecutorSig);
  });

  it('rejects a receipt from another key, or over other content', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)]]);
    expectRejected(f, s, [confirmTx(f, 1n, { signer: f.hosts[2] })], DevshardErrorCode.InvalidExecutorSig);
    expectRejected(
      f,
      s,
      [confirmTx(f, 1n, { start: { maxTokens: 51n } })],
      DevshardErrorCode.InvalidExecutorSig,
    );
    const short = txOf.confirmStart(
      newMsg.confirmStart({ inferenceId: 1n, executorSig: new Uint8Array(64) }),
    );
    expectRejected(f, s, [short], DevshardErrorCode.InvalidExecutorSig);
  });

  it('rejects unknown ids, non-Pending records and sealed records', () => {
    const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 1n } });
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n)]]);
    expectRejected(f, s, [confirmTx(f, 9n)], DevshardErrorCode.InferenceNotFound);
    expectRejected(f, s, [confirmTx(f, 1n)], DevshardErrorCode.InvalidTransition);
    // Drained at settlement: the id is sealed, a confirm is an invalid transition.
    const settled = run(f, [[txOf.finalizeRound()], [], [], [], [], []], {}, s);
    expect(settled.inferences.size).toBe(0);
    expect(() => run(f, [[confirmTx(f, 1n)]], {}, settled)).toThrow();
    expectRejected(f, settled, [confirmTx(f, 1n)], DevshardErrorCode.InvalidTransition);
  });

  it('accepts a warm key of the executor, binds it, and refuses a second warm key', () => {
    const f = makeFixture({ tag: 'v5' });
    const warm = keyN(200);
    const other = keyN(201);
    const grants = new Map([[f.hosts[1]!.address, new Set([warm.address, other.address])]]);
    const isWarmKey = (cold: string, signer: string) => grants.get(cold)?.has(signer) ?? false;
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n, { signer: warm })]], { isWarmKey });
    expect(s.warmKeys.get(1)).toBe(warm.address);
    // Without the lookup a warm key is not accepted.
    const s1 = run(f, [[startTx(1n)]]);
    expectRejected(f, s1, [confirmTx(f, 1n, { signer: warm })], DevshardErrorCode.InvalidExecutorSig);
    // Once slot 1 is bound, another grantee is refused for it.
    const s6 = run(f, [[], [], [], [startTx(6n)]], { isWarmKey }, s);
    expectRejected(f, s6, [confirmTx(f, 6n, { signer: other })], DevshardErrorCode.InvalidExecutorSig, {
      isWarmKey,
    });
  });
});
