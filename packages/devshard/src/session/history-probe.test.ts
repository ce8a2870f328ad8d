import { describe, expect, it } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';
import { InMemorySessionStore } from './memory-store.js';

describe('a session this store never wrote asks the hosts for nonce 1 before signing (history-probe.ts)', () => {
  it('refuses to open when the hosts hold diffs another store wrote: nothing is signed twice', async () => {
    const t = setup();
    await t.init();
    const first = await t.open();
    await first.infer(request());
    await first.infer(request());
    await first.close();
    const hostNonces = t.hostKeys.map((k) => t.net.hosts.get(k.address)!.diffs.length);

    // A hot-swap import into a gateway with its own (empty) store.
    const elsewhere = new InMemorySessionStore();
    await elsewhere.create(t.record);
    await expect(t.open({ store: elsewhere })).rejects.toMatchObject({
      code: SessionErrorCode.HistoryElsewhere,
    });
    expect((await elsewhere.load(ESCROW_ID))!.diffs).toEqual([]);
    expect(t.hostKeys.map((k) => t.net.hosts.get(k.address)!.diffs.length)).toEqual(hostNonces);
  });

  it('opens a fresh escrow, and still opens when hosts cannot answer the probe', async () => {
    const t = setup();
    await t.init();
    const fresh = await t.open();
    expect((await fresh.infer(request())).nonce).toBe(1n);
    await fresh.close();

    const u = setup();
    await u.init();
    const silent = await u.open({
      transport: Object.assign(Object.create(u.net), {
        getDiffs: async () => {
          throw new Error('no recovery route');
        },
      }),
    });
    expect((await silent.infer(request())).nonce).toBe(1n);
    expect(u.events.some((e) => e.type === 'host_error' && e.operation === 'history-probe')).toBe(true);
  });
});
