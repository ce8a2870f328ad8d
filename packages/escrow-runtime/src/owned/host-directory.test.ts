import { createChainClient } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { HostDirectory, type StoredCopyUse } from './host-directory.js';
import type { StoredHosts } from './stored-hosts.js';

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

/** A node whose participants answer can be switched to 503 or to hanging, and whose URLs can move. */
function switchableNode() {
  const state = { mode: 'up' as 'up' | 'down' | 'hang', port: 8080, queries: 0 };
  const fetch = async (_url: string, init?: RequestInit) => {
    state.queries++;
    if (state.mode === 'down') return new Response('unavailable', { status: 503 });
    if (state.mode === 'hang') {
      return new Promise<Response>((_, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    }
    const participants = ['gonka1a', 'gonka1b', 'gonka1other'].map((index) => ({
      index,
      inference_url: `http://${index}:${state.port}`,
      weight: '1',
      models: ['m'],
    }));
    return Response.json({ active_participants: { participants }, excluded_participants: [] });
  };
  const client = createChainClient({
    chainRest: 'http://node',
    publicApi: 'http://node',
    fetch: fetch as unknown as typeof globalThis.fetch,
    timeoutMs: 60_000,
  });
  return { state, client };
}

/** escrow_hosts in memory. */
class MemoryStoredHosts implements StoredHosts {
  readonly rows = new Map<bigint, Map<string, string>>();
  saves = 0;
  async load(escrowId: bigint) {
    return new Map(this.rows.get(escrowId) ?? []);
  }
  async save(escrowId: bigint, urls: ReadonlyMap<string, string>) {
    this.saves++;
    const row = this.rows.get(escrowId) ?? new Map<string, string>();
    for (const [a, u] of urls) row.set(a, u);
    this.rows.set(escrowId, row);
  }
}

describe('HostDirectory with stored copies (node outages)', () => {
  it('stores the group once opened; a new directory opens from the copy while the node answers 503; the node wins again once it answers', async () => {
    const node = switchableNode();
    const stored = new MemoryStoredHosts();
    const first = new HostDirectory({ client: node.client, stored, minRefreshMs: 0 });
    await first.prepareFor(7n);
    first.remember(7n, ['gonka1a', 'gonka1b', 'gonka1a']);
    await expect.poll(() => stored.rows.get(7n)?.size).toBe(2);
    expect(stored.rows.get(7n)?.get('gonka1a')).toBe('http://gonka1a:8080');

    // A takeover on another replica (or after a restart) while the node is down.
    node.state.mode = 'down';
    const uses: StoredCopyUse[] = [];
    const taker = new HostDirectory({
      client: node.client,
      stored,
      minRefreshMs: 60_000,
      onStoredCopy: (u) => uses.push(u),
    });
    await taker.prepareFor(7n);
    expect(uses).toMatchObject([{ escrowId: 7n, hosts: 2 }]);
    expect(taker.nodeDown).toBe(true);
    expect(taker.resolve('gonka1b', 'v5')?.baseUrl).toBe('http://gonka1b:8080/devshard/v5');
    // An escrow never opened with the node's answer has no copy: the node's error stands.
    await expect(taker.prepareFor(8n)).rejects.toThrow(/503|error status/);
    // Remembered while the node is down: nothing is written from a stored copy.
    const saves = stored.saves;
    taker.remember(7n, ['gonka1a', 'gonka1b']);
    expect(stored.saves).toBe(saves);

    // The node answers again, with a participant moved: its answer is used and the copy rewritten.
    node.state.mode = 'up';
    node.state.port = 9090;
    await taker.refresh();
    expect(taker.nodeDown).toBe(false);
    expect(taker.resolve('gonka1a', 'v5')?.baseUrl).toBe('http://gonka1a:9090/devshard/v5');
    await expect.poll(() => stored.rows.get(7n)?.get('gonka1a')).toBe('http://gonka1a:9090');
    // Forgotten (the session closed here): later changes are someone else's to write.
    taker.forget(7n);
    node.state.port = 9191;
    await taker.refresh();
    expect(stored.rows.get(7n)?.get('gonka1a')).toBe('http://gonka1a:9090');
  });

  it('a node that does not answer at all delays an open by nodeWaitMs at most, then not at all while it stays down', async () => {
    const node = switchableNode();
    const stored = new MemoryStoredHosts();
    stored.rows.set(3n, new Map([['gonka1a', 'http://gonka1a:8080']]));
    node.state.mode = 'hang';
    const hosts = new HostDirectory({ client: node.client, stored, nodeWaitMs: 2_000, minRefreshMs: 0 });
    const started = Date.now();
    await hosts.prepareFor(3n);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(hosts.resolve('gonka1a', 'v5')?.baseUrl).toBe('http://gonka1a:8080/devshard/v5');
    expect(hosts.nodeDown).toBe(true);
    // The next open (another escrow's takeover) does not wait nodeWaitMs for the node again.
    const again = Date.now();
    await hosts.prepareFor(3n);
    expect(Date.now() - again).toBeLessThan(1_900);
  });
});
