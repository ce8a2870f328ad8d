import { describe, expect, it } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';
import type { StoredDiff } from './store.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** A store whose appendDiff can land and then fail, or fail without landing (connection lost). */
function flakyStore(t: ReturnType<typeof setup>) {
  const mode = { landThenFail: 0, down: false };
  const appends: StoredDiff[] = [];
  const store = wrapStore(t.store, {
    appendDiff: async (id, d, token, writes) => {
      appends.push(d);
      if (mode.down) throw new Error('connection refused');
      await t.store.appendDiff(id, d, token, writes);
      if (mode.landThenFail > 0) {
        mode.landThenFail--;
        throw new Error('connection reset after COMMIT');
      }
    },
  });
  /** Every signature appended at `nonce`: one distinct value means the nonce was signed once. */
  const signaturesAt = (nonce: bigint) =>
    new Set(appends.filter((d) => d.nonce === nonce).map((d) => hex(d.diff.userSig)));
  return { store, mode, appends, signaturesAt };
}

describe('write-ahead failures (architecture §2.3)', () => {
  it('resolves a commit of unknown outcome by appending the identical diff again', async () => {
    const t = setup();
    await t.init();
    const f = flakyStore(t);
    const s = await t.open({ store: f.store });
    await s.infer(request());
    f.mode.landThenFail = 1;
    const r = await s.infer(request());
    expect(r).toMatchObject({ nonce: 2n, status: 'completed', finished: true });
    expect(f.appends.filter((d) => d.nonce === 2n)).toHaveLength(2);
    expect(f.signaturesAt(2n).size).toBe(1);
    expect(s.fault).toBeUndefined();
    expect((await s.infer(request())).nonce).toBe(3n);
    expect(t.net.conflicts).toEqual([]);
  });

  it('a store down through every retry: the request fails, and the same diff is appended before the next one', async () => {
    const t = setup();
    await t.init();
    const f = flakyStore(t);
    const s = await t.open({ store: f.store, appendAttempts: 3 });
    await s.infer(request());
    f.mode.down = true;
    const calls = t.net.calls.length;
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    expect(f.appends.filter((d) => d.nonce === 2n)).toHaveLength(3);
    expect(t.net.calls.length).toBe(calls); // nothing sent
    expect(s.fault).toBeUndefined();
    expect(s.canStartInference).toBe(true); // still routable: the next request settles nonce 2 first
    // Still down: the next request retries the same diff and fails again, composing nothing new.
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    f.mode.down = false;
    const r = await s.infer(request());
    expect(r).toMatchObject({ nonce: 3n, status: 'completed' });
    expect(f.signaturesAt(2n).size).toBe(1); // nonce 2 was only ever the one diff
    expect((await t.store.load(ESCROW_ID))!.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n]);
    for (const h of t.net.hosts.keys()) await s.catchUpHost(h);
    expect(t.net.allAt(s.state)).toBe(true);
    expect(t.net.conflicts).toEqual([]);
  });

  it('an unknown outcome that had landed is a no-op when resolved later', async () => {
    const t = setup();
    await t.init();
    let calls = 0;
    let down = true;
    const store = wrapStore(t.store, {
      appendDiff: async (id, d, token, writes) => {
        calls++;
        if (calls === 1) {
          await t.store.appendDiff(id, d, token, writes);
          throw new Error('connection reset after COMMIT');
        }
        if (down) throw new Error('connection refused');
        return t.store.appendDiff(id, d, token, writes);
      },
    });
    const s = await t.open({ store, appendAttempts: 2 });
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    expect((await t.store.load(ESCROW_ID))!.lastNonce).toBe(1n); // it had landed
    expect(s.latestNonce).toBe(0n);
    down = false;
    expect(await s.infer(request())).toMatchObject({ nonce: 2n, status: 'completed' });
    expect(s.state.inferences.has(1n)).toBe(true);
    expect((await t.store.load(ESCROW_ID))!.diffs.map((d) => d.nonce)).toEqual([1n, 2n]);
    expect(t.net.conflicts).toEqual([]);
  });

  it('a nonce already taken under our own token: the store head is read back and the session goes on', async () => {
    const t = setup();
    await t.init();
    const a = await t.open();
    // A second view with the same token (what a store bug or a lost in-memory append looks like).
    const sameToken = wrapStore(t.store, { acquire: async (id) => (await t.store.load(id))! });
    const b = await t.open({ store: sameToken });
    expect(b.fencingToken).toBe(a.fencingToken);
    await a.infer(request());
    await a.infer(request());
    await expect(b.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    expect(b.latestNonce).toBe(2n);
    expect(b.state.root).toEqual(a.state.root);
    expect(b.fault).toBeUndefined();
    expect(await b.infer(request())).toMatchObject({ nonce: 3n, status: 'completed' });
    expect(t.net.conflicts).toEqual([]);
  });
});
