// Guards toward the network. With DEVSHARD_POC_REQUEST_MODE=off a request while
// the network runs PoC is answered 503 with Retry-After before any nonce is taken. Host URLs come from
// chain participant records, which anyone who registers can write: a proxy that does not allow
// private addresses never calls a loopback host (the devnet's hosts all listen on 127.0.0.1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, type InProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;

beforeAll(async () => {
  stack = await ProxyStack.start(1);
  replica = await stack.startInProcess(
    'strict',
    { DEVSHARD_POC_REQUEST_MODE: 'off' },
    { allowPrivateHosts: false, pocCheckEveryMs: 100 },
  );
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
}, 90_000);

afterAll(async () => {
  await stack?.close();
});

const send = () =>
  fetch(`${replica.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 64 }),
  });

describe('network guards', () => {
  it('PoC with the mode off: 503 with Retry-After, no nonce taken', async () => {
    stack.gateway.devnet.epochs.setConfirmationPoc('CONFIRMATION_POC_GENERATION');
    try {
      // Until the replica's watch has read the phase, requests still go out (and take nonces).
      await expect.poll(async () => (await send()).status, { timeout: 3_000, interval: 100 }).toBe(503);
      const before = await stack.startedInferences();
      const res = await send();
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('10');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('poc_active');
      expect(await stack.startedInferences()).toBe(before);
    } finally {
      stack.gateway.devnet.epochs.setConfirmationPoc(null);
    }
  });

  it('private host addresses are refused: an OpenAI error and no host is called', async () => {
    let res = await send();
    for (
      let i = 0;
      i < 30 && ((await res.clone().json()) as { error?: { code?: string } }).error?.code === 'poc_active';
      i++
    ) {
      await new Promise((r) => setTimeout(r, 100));
      res = await send();
    }
    expect(res.status).toBeGreaterThanOrEqual(500);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'api_error', code: expect.not.stringMatching(/^poc_active$/) });
    const escrow = stack.escrows[0]!;
    for (const host of escrow.hosts) {
      expect(stack.gateway.devnet.devshardHosts.session(host, escrow.id)?.latestNonce ?? 0n).toBe(0n);
    }
  });
});
