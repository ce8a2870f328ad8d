// The finalize gate over in-process hosts: a refused inference blocks finalize (completion_pending)
// until its refusal deadline passed, then the gate's timeout round settles it at cost 0.
import { describe, expect, it } from 'vitest';
import { request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';
import { CompletionPendingError } from './finalize-gate.js';

describe('finalize gate', () => {
  it('answers completion_pending for a refused inference, then times it out and finalizes', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    await s.infer(request());
    const refuser = t.net.hostOfSlot(2);
    refuser.behaviour.refuse = true;
    const refused = await s.infer(request());
    expect(refused).toMatchObject({ nonce: 2n, confirmed: false });

    const error = await s.finalize().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompletionPendingError);
    expect(error).toMatchObject({ code: SessionErrorCode.CompletionPending, nonces: [2n], unresolvable: [] });
    expect(s.canStartInference).toBe(true);

    t.clock.advance(Number(s.state.config.refusalTimeout) + 6);
    await s.finalize();
    expect(s.state.phase).toBe(2); // Settlement
    const slot = 2;
    expect(s.state.hostStats[slot]).toMatchObject({ missed: 1, cost: 0n });
    const stored = await t.store.load(s.escrowId);
    const timedOut = stored!.diffs.some((d) =>
      d.diff.txs.some((x) => x.tx.kind === 'timeoutInference' && x.tx.msg.inferenceId === 2n),
    );
    expect(timedOut).toBe(true);
  });
});
