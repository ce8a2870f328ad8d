import { describe, expect, it } from 'vitest';
import * as hostFace from '../host-face.js';
import * as coreFace from '../index.js';
import * as sessionFace from '../session-face.js';
import type { SignedDiff } from '../signing/diff.js';
import * as testingFace from '../testing/index.js';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const view = (d: SignedDiff) => ({
  nonce: d.nonce,
  txs: d.txs.map((t) => hex(t.bytes)),
  userSig: hex(d.userSig),
  postStateRoot: hex(d.postStateRoot),
});

describe('diffs are signed only on the write-ahead path (architecture §2.3)', () => {
  it('no face of the package exports a diff signer', () => {
    for (const face of [coreFace, sessionFace, hostFace, testingFace]) {
      expect(Object.keys(face)).not.toContain('signDiff');
    }
    expect(Object.keys(sessionFace)).toContain('UserSession');
  });

  it('every diff any host received equals the stored row at its nonce', async () => {
    const t = setup();
    await t.init();
    let flaky = 0;
    const store = wrapStore(t.store, {
      appendDiff: async (id, d, token, writes) => {
        await t.store.appendDiff(id, d, token, writes);
        if (flaky > 0) {
          flaky--;
          throw new Error('connection reset after COMMIT'); // landed: retried with the same diff
        }
      },
    });
    const s = await t.open({ store, catchUpChunk: 3 });
    const lagging = t.net.hostOfSlot(2);
    lagging.behaviour.down = true;
    await Promise.all(Array.from({ length: 8 }, () => s.infer(request())));
    flaky = 2;
    for (let i = 0; i < 6; i++) await s.infer(request());
    lagging.behaviour.down = false;
    t.net.hostOfSlot(4).behaviour.refuse = true;
    while ((s.latestNonce + 1n) % 16n !== 4n && (s.latestNonce + 1n) % 16n !== 9n) await s.infer(request());
    const refused = await s.infer(request());
    expect(refused.confirmed).toBe(false);
    t.clock.advance(65);
    const outcomes = await s.checkTimeouts(); // verify-timeout requests carry diffs too
    expect(outcomes.find((o) => o.inferenceId === refused.nonce)).toMatchObject({ outcome: 'applied' });
    // The lagging host's inferences were confirmed when the voters challenged it, never finished:
    // the finalize gate (finalize-gate.ts) holds finalize until their execution deadline has passed,
    // then its timeout round settles them (more verify-timeout requests carrying diffs).
    await expect(s.finalize()).rejects.toMatchObject({ code: SessionErrorCode.CompletionPending });
    t.clock.advance(Number(s.state.config.executionTimeout) + 10);
    await s.finalize();

    const rows = new Map((await t.store.load(ESCROW_ID))!.diffs.map((d) => [d.nonce, view(d.diff)]));
    expect(t.net.received.length).toBeGreaterThan(rows.size);
    for (const d of t.net.received) expect(view(d)).toEqual(rows.get(d.nonce));
    for (const d of (await t.store.load(ESCROW_ID))!.diffs) {
      expect(t.net.received.some((r) => r.nonce === d.nonce)).toBe(true);
    }
    expect(t.net.conflicts).toEqual([]);
  });
});
