// The session composes the next state and adopts it only once the write-ahead succeeded (§7.1,
// session/write-ahead.ts). With the persistent live map (state/live-records.ts) the composed state
// shares chunks with the current one, so this checks that a composition whose write failed left
// the current state exactly as it was: same records, same entries, a live_hash that still equals
// the from-scratch hash, and a state the next composition and a reopened session build on.
import { describe, expect, it } from 'vitest';
import { liveRecordsHash } from '../hash/rest-hash.js';
import { composeDiff } from '../state/compose.js';
import { liveRecordsAscending, withRoot } from '../state/root.js';
import type { SessionState } from '../state/types.js';
import { request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function fingerprint(s: SessionState): string[] {
  return [...s.inferences.values()].map((r) => `${r.id}:${r.status}:${hex(r.entry)}`);
}

describe('a failed write-ahead', () => {
  it('leaves the session state intact and usable (persistent live map)', async () => {
    const t = setup();
    await t.init();
    const first = await t.open();
    // More than one 32-record chunk of live records, with Pending ones among them.
    for (let i = 0; i < 40; i++) await first.infer(request());
    const failing = wrapStore(t.store, {
      appendDiff: async () => {
        throw new Error('database unavailable');
      },
    });
    // One attempt: the outcome stays unknown, the request fails and nothing is adopted (append.ts).
    const s = await t.open({ store: failing, appendAttempts: 1 });
    const before = s.state;
    const records = fingerprint(before);
    const root = hex(before.root);
    expect(before.inferences.size).toBeGreaterThan(32);

    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });

    expect(s.state).toBe(before);
    expect(fingerprint(s.state)).toEqual(records);
    expect(hex(s.state.root)).toBe(root);
    const scratch = liveRecordsHash(liveRecordsAscending(before.inferences).map((r) => r.entry));
    expect(hex(before.liveHash)).toBe(hex(scratch));
    // Rebuilt from plain fields (no cached hash or chunk shared), the root is the same.
    const { liveHash: _l, root: _r, ...working } = before;
    expect(hex(withRoot({ ...working, inferences: new Map(before.inferences) }).root)).toBe(root);
    // The old state still composes, twice alike (nothing consumed by the failed attempt).
    const a = composeDiff(before, []);
    const b = composeDiff(before, []);
    expect(hex(a.state.root)).toBe(hex(b.state.root));
    expect(fingerprint(before)).toEqual(records);

    const reopened = await t.open();
    expect(hex(reopened.state.root)).toBe(root);
    expect((await reopened.infer(request())).nonce).toBe(before.latestNonce + 1n);
  });
});
