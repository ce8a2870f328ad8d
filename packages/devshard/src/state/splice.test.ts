// §10.1: a host-proposed tx with fields this schema does not know is spliced into diffs as received,
// and both the host's signature over it and the user's signature over the diff still verify.
import { concat, ProtoWriter } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { diffFromWire, diffToWire } from '../json/wire.js';
import { encodeMessage } from '../proto/codec.js';
import { decodeTx } from '../proto/devshard-tx.js';
import { newMsg } from '../proto/tx-builders.js';
import { MsgFinishInferenceSchema } from '../proto/tx-messages.js';
import { signDiff } from '../signing/diff.js';
import { signPreimage } from '../signing/primitive.js';
import { recoverFinishProposer } from '../signing/proposer.js';
import { run } from '../testing/drive.js';
import { confirmTx, makeFixture, RESPONSE_HASH, startTx } from '../testing/session-fixture.js';
import { applyDiff } from './apply-diff.js';
import { composeDiff } from './compose.js';
import { InferenceStatus } from './types.js';

describe('splicing host txs with unknown fields', () => {
  it('keeps the received bytes and verifies on every replica', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n)]]);

    // A newer host adds field 20 to MsgFinishInference and signs over it, as Go does (unknown last).
    const known = newMsg.finishInference({
      inferenceId: 1n,
      responseHash: RESPONSE_HASH,
      inputTokens: 10n,
      executorSlot: 1,
      escrowId: f.escrowId,
    });
    const future = new ProtoWriter().string(20, 'future field').finish();
    const preimage = concat([encodeMessage(MsgFinishInferenceSchema, known), future]);
    const proposerSig = signPreimage(f.hosts[1]!, preimage);
    const finishBytes = concat([encodeMessage(MsgFinishInferenceSchema, { ...known, proposerSig }), future]);
    const wire = new ProtoWriter().message(3, finishBytes).finish();

    const received = decodeTx(wire);
    expect(received.canonical).toBe(true);
    expect(received.bytes).toEqual(wire);
    if (received.tx.kind !== 'finishInference') throw new Error('kind');
    expect(recoverFinishProposer(received.tx.msg)).toBe(f.hosts[1]!.address);

    const composed = composeDiff(s, [received]);
    expect(composed.dropped).toEqual([]);
    expect(composed.diff.txs[0]!.bytes).toEqual(wire);
    const signed = signDiff(f.user, f.escrowId, composed.diff);

    // Through the JSON wire form to a strict host.
    const host = applyDiff(s, diffFromWire(diffToWire(signed), { strict: true }));
    expect(host.state.root).toEqual(composed.state.root);
    expect(host.state.inferences.get(1n)!.status).toBe(InferenceStatus.Finished);
  });

  it('would fail verification if the unknown field were dropped (why §10.1 matters)', () => {
    const f = makeFixture({ tag: 'v5' });
    const known = newMsg.finishInference({ inferenceId: 1n, executorSlot: 1, escrowId: f.escrowId });
    const future = new ProtoWriter().uint64(20, 5n).finish();
    const proposerSig = signPreimage(
      f.hosts[1]!,
      concat([encodeMessage(MsgFinishInferenceSchema, known), future]),
    );
    expect(recoverFinishProposer({ ...known, proposerSig })).not.toBe(f.hosts[1]!.address);
  });
});
