// Issue 11 §9: host URLs come from chain participant records, which anyone who registers can write.
// A proxy that does not allow private addresses never calls a loopback host (the devnet's hosts all
// listen on 127.0.0.1): the request fails cleanly and no host received a diff.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, type InProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;

beforeAll(async () => {
  stack = await ProxyStack.start(1);
  replica = await stack.startInProcess('strict', {}, { allowPrivateHosts: false });
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
}, 90_000);

afterAll(async () => {
  await stack?.close();
});

describe('private host addresses', () => {
  it('are refused: the request fails with an OpenAI error and no host is called', async () => {
    const res = await fetch(`${replica.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 64,
      }),
    });
    expect(res.status).toBeGreaterThanOrEqual(500);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'api_error', code: expect.any(String) });
    const escrow = stack.escrows[0]!;
    for (const host of escrow.hosts) {
      expect(stack.gateway.devnet.devshardHosts.session(host, escrow.id)?.latestNonce ?? 0n).toBe(0n);
    }
  });
});
