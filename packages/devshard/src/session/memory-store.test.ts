import { describe, expect, it } from 'vitest';
import { contractDiff, contractRecord, sessionStoreContract } from '../testing/store-contract.js';
import { InMemorySessionStore } from './memory-store.js';

sessionStoreContract('in-memory', () => new InMemorySessionStore(), { describe, it });

describe('in-memory store with keepDiffs (a session driven to max_nonce by a benchmark)', () => {
  it('drops the diffs and signatures that far behind the newest snapshot, and nothing a reopen needs', async () => {
    const store = new InMemorySessionStore({ keepDiffs: 2 });
    await store.create(contractRecord('7'));
    const { fencingToken } = await store.acquire('7');
    const signed = (nonce: bigint) => ({
      signatures: [{ nonce, signatures: [{ slotId: 0, signature: new Uint8Array(65).fill(1) }] }],
    });
    for (let n = 1n; n <= 6n; n++) await store.appendDiff('7', contractDiff(n), fencingToken, signed(n));
    const at5 = { nonce: 5n, root: contractDiff(5n).root, state: new Uint8Array([1]) };
    await store.saveSnapshot('7', at5, fencingToken);
    await expect(store.readDiffs('7', 2n, 3n)).rejects.toThrow(RangeError);
    expect((await store.readDiffs('7', 3n, 6n)).map((d) => d.nonce)).toEqual([3n, 4n, 5n, 6n]);
    expect((await store.loadSignatures('7', 2n)).size).toBe(0);
    expect((await store.loadSignatures('7', 3n)).size).toBe(1);
    await store.appendDiff('7', contractDiff(7n), fencingToken);
    const loaded = (await store.acquire('7'))!;
    expect([loaded.lastNonce, loaded.snapshot?.nonce, loaded.diffs.map((d) => d.nonce)]).toEqual([
      7n,
      5n,
      [6n, 7n],
    ]);
  });
});
