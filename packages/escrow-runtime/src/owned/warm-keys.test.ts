import { createChainClient } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { WarmKeyDirectory } from './warm-keys.js';

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const grant = (grantee: string) => ({
  grantee,
  authorization: {
    '@type': '/cosmos.authz.v1beta1.GenericAuthorization',
    msg: '/inference.inference.MsgStartInference',
  },
  expiration: null,
});

/** A node with escrow 7 (slots cold-a, cold-a, cold-b) whose authz answers can be switched off. */
function node() {
  const state = { up: true, authzReads: 0 };
  const fetch = async (url: string) => {
    if (url.includes('/devshard_escrow/7'))
      return json({ found: true, escrow: { id: '7', slots: ['cold-a', 'cold-a', 'cold-b'] } });
    const granter = /grants\/granter\/([^/?]+)/.exec(url)?.[1];
    if (granter === undefined) return json({ code: 5 }, 404);
    state.authzReads++;
    if (!state.up) return json({ code: 14, message: 'unavailable' }, 503);
    return json({ grants: [grant(`warm-of-${granter}`)], pagination: { next_key: null } });
  };
  const client = createChainClient({
    chainRest: 'http://node',
    publicApi: 'http://node',
    fetch: fetch as unknown as typeof globalThis.fetch,
  });
  return { client, state };
}

describe('WarmKeyDirectory', () => {
  it("loads every slot holder's warm keys before a session opens, and keeps them when a read fails", async () => {
    const { client, state } = node();
    const errors: unknown[] = [];
    const keys = new WarmKeyDirectory({ client, refreshEveryMs: 0, onError: (e) => errors.push(e) });
    expect(keys.isWarmKey('cold-a', 'warm-of-cold-a')).toBe(false);
    await keys.prepareFor(7n);
    expect(keys.isWarmKey('cold-a', 'warm-of-cold-a')).toBe(true);
    expect(keys.isWarmKey('cold-b', 'warm-of-cold-b')).toBe(true);
    expect(keys.isWarmKey('cold-a', 'warm-of-cold-b')).toBe(false);
    expect(state.authzReads).toBe(2);

    // The chain stops answering: prepareFor and refresh never throw, the last answers stay.
    state.up = false;
    await keys.prepareFor(7n);
    keys.track(7n, ['cold-a', 'cold-b']);
    await keys.refresh();
    expect(errors.length).toBeGreaterThan(0);
    expect(keys.isWarmKey('cold-b', 'warm-of-cold-b')).toBe(true);
    keys.forget(7n);
    keys.close();
  });

  it('answers false while it has no answer for a validator', async () => {
    const { client, state } = node();
    state.up = false;
    const keys = new WarmKeyDirectory({ client });
    await keys.prepareFor(7n);
    expect(keys.isWarmKey('cold-a', 'warm-of-cold-a')).toBe(false);
    expect(keys.warmKeysOf('cold-a')).toBeUndefined();
  });
});
