import { createChainClient } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { HostDirectory } from './host-directory.js';

/** A node whose participants list grows by one participant per query. */
function growingNode() {
  let queries = 0;
  const fetch = async () => {
    queries++;
    const participants = Array.from({ length: queries }, (_, i) => ({
      index: `gonka1host${i}`,
      inference_url: `http://host-${i}:8080/`,
      weight: '1',
      models: ['m'],
    }));
    return new Response(
      JSON.stringify({ active_participants: { participants }, excluded_participants: [] }),
      {
        headers: { 'content-type': 'application/json' },
      },
    );
  };
  return { fetch: fetch as unknown as typeof globalThis.fetch, queries: () => queries };
}

describe('HostDirectory', () => {
  it('resolves known hosts to their devshard base URL and refreshes (rate-limited) on an unknown one', async () => {
    const node = growingNode();
    const client = createChainClient({
      chainRest: 'http://node',
      publicApi: 'http://node',
      fetch: node.fetch,
    });
    const hosts = new HostDirectory({ client, minRefreshMs: 0 });
    await hosts.refresh();
    expect(hosts.resolve('gonka1host0', 'v5')).toEqual({
      address: 'gonka1host0',
      baseUrl: 'http://host-0:8080/devshard/v5',
    });
    // Unknown now (treated as down), found once the refresh it started has landed.
    expect(hosts.resolve('gonka1host1', 'v5')).toBeUndefined();
    await expect
      .poll(() => hosts.resolve('gonka1host1', 'v5')?.baseUrl)
      .toBe('http://host-1:8080/devshard/v5');

    const limited = new HostDirectory({ client, minRefreshMs: 60_000 });
    await limited.refresh();
    const before = node.queries();
    for (let i = 0; i < 5; i++) expect(limited.resolve('gonka1nobody', 'v5')).toBeUndefined();
    expect(node.queries()).toBe(before);
  });
});
