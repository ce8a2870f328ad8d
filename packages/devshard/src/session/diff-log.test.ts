import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { PayloadWire } from '../json/wire.js';
import { DiffLog } from './diff-log.js';
import type { StoredDiff } from './store.js';

const root = (n: number) => new Uint8Array(32).fill(n % 256);
const payload: PayloadWire = { prompt: new Uint8Array([1, 2, 3]) } as unknown as PayloadWire;
const diff = (n: number, withPayload = false): StoredDiff => ({
  nonce: BigInt(n),
  diff: { nonce: BigInt(n), txs: [], userSig: new Uint8Array(65), postStateRoot: new Uint8Array(0) },
  root: root(n),
  warmKeysBound: [],
  ...(withPayload ? { payload } : {}),
});

describe('DiffLog window', () => {
  it('holds at most `window` diffs, continuing from its base', () => {
    const log = new DiffLog(root(200), 100n, 5);
    for (let n = 101; n <= 130; n++) log.append(diff(n));
    expect(log.latestNonce).toBe(130n);
    expect(log.held).toBe(5);
    expect(log.firstHeld).toBe(126n);
    expect(log.get(125n)).toBeUndefined();
    expect(log.get(126n)?.nonce).toBe(126n);
    expect(log.rootAt(100n)).toEqual(root(200)); // the base root stays known
    expect(log.rootAt(110n)).toBeUndefined(); // older than the window: only the store knows it
    expect(log.rootAt(130n)).toEqual(root(130));
    expect(log.rootAt(131n)).toBeUndefined();
    expect(log.range(120n, 200n).map((d) => d.nonce)).toEqual([126n, 127n, 128n, 129n, 130n]);
    expect(() => log.append(diff(132))).toThrow(RangeError);
  });

  it('lets go of a diff once it leaves the window, so memory does not grow with the nonce', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const log = new DiffLog(root(0), 0n, 5);
    const dropped: WeakRef<StoredDiff>[] = [];
    for (let n = 1; n <= 8; n++) {
      const d = diff(n);
      if (n <= 3) dropped.push(new WeakRef(d));
      log.append(d);
    }
    expect(log.firstHeld).toBe(4n); // 1–3 left the window, long before the next batch cut (at 10)
    await new Promise((r) => setImmediate(r)); // WeakRef targets are kept until the job ends
    gc();
    expect(dropped.map((r) => r.deref())).toEqual([undefined, undefined, undefined]);
    expect(log.get(4n)?.nonce).toBe(4n);
  });

  it('keeps payloads apart from the diffs and only while the inference is Pending', () => {
    const log = new DiffLog(root(0));
    log.append(diff(1, true));
    log.append(diff(2, true));
    expect(log.get(1n)!.payload).toBeUndefined();
    expect(log.payload(1n)).toBe(payload);
    log.prunePayloads((id) => id === 2n);
    expect(log.payload(1n)).toBeUndefined();
    expect(log.payloadCount).toBe(1);
  });
});
