// Proxy replicas as real processes (apps/proxy/src/main.ts) on the devnet: a request that lands on
// the replica owning nothing for the model is forwarded to the owner (streamed and not); admission
// holds for the fleet, not per replica; an owner killed with SIGKILL mid-stream gives its client a
// clean error and the other replica serves the escrow again within seconds.
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusBody } from './proxy-stack.js';
import { ADMIN_KEY, type ProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

let stack: ProxyStack;
let owner: ProcessReplica;
let other: ProcessReplica;
const messages = [{ role: 'user' as const, content: 'Tell me about leases' }];

async function metric(replica: ProcessReplica, name: string): Promise<number> {
  const text = await (await fetch(`${replica.url}/metrics`)).text();
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

beforeAll(async () => {
  // One escrow: its owner keeps it (fair share of 1 over 2 replicas is 1), the other owns nothing.
  stack = await ProxyStack.start(1);
  const limits = { GATEWAY_MAX_CONCURRENT_REQUESTS: '1' };
  owner = await stack.startProcess('owner', limits);
  await waitFor('the owner owns the escrow', async () => (await stack.ownedBy(owner)).length === 1);
  other = await stack.startProcess('other', limits);
  await waitFor('the other replica sees the owner', async () => {
    const status = (await (await fetch(`${other.url}/v1/status`)).json()) as StatusBody;
    return status.replicas.length === 2 && status.devshards[0]?.owner === owner.replicaId;
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

describe('two proxy replicas', () => {
  it('forwards a request that lands on the replica owning nothing to the owner, streamed and not', async () => {
    expect(await stack.ownedBy(other)).toEqual([]);
    const before = await stack.startedInferences();
    const client = stack.client(other);
    const completion = await client.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 64,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(await metric(other, 'devshard_gateway_forwarded_requests_total')).toBe(2);
    expect(await stack.startedInferences()).toBeGreaterThanOrEqual(before + 2);
  });

  it('holds the concurrency limit for the fleet: a request on one replica counts on the other', async () => {
    stack.gateway.devnet.model.setLatency({ perTokenMs: 30 });
    try {
      const slow = await stack.client(owner).chat.completions.create({
        model: QWEN_MODEL,
        messages,
        max_tokens: 64,
        stream: true,
      });
      const iterator = slow[Symbol.asyncIterator]();
      await iterator.next(); // admitted and streaming on the owner
      const refused = await fetch(`${other.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: QWEN_MODEL, messages, max_tokens: 64 }),
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(refused.headers.get('x-should-retry')).toBe('true');
      while (!(await iterator.next()).done) {
        // read to the end: the slot is released
      }
    } finally {
      stack.gateway.devnet.model.setLatency({ perTokenMs: 0 });
    }
    await expect
      .poll(
        async () =>
          (
            await fetch(`${other.url}/v1/chat/completions`, {
              method: 'POST',
              headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
              body: JSON.stringify({ model: QWEN_MODEL, messages, max_tokens: 64 }),
            })
          ).status,
        { timeout: 5_000, interval: 100 },
      )
      .toBe(200);
  });

  it('an owner killed mid-stream: its client gets an error, the other replica serves the escrow within seconds', async () => {
    // The previous request's admission slot is released once its response closed.
    await waitFor('no request in flight', async () => {
      const status = (await (await fetch(`${owner.url}/v1/status`)).json()) as StatusBody;
      return status.limiter.in_flight === 0;
    });
    stack.gateway.devnet.model.setLatency({ perTokenMs: 40 });
    let cut: unknown;
    try {
      const stream = await stack.client(owner).chat.completions.create({
        model: QWEN_MODEL,
        messages,
        max_tokens: 64,
        stream: true,
      });
      let chunks = 0;
      try {
        for await (const _ of stream) {
          chunks++;
          if (chunks === 2) process.kill(owner.proc.child.pid!, 'SIGKILL');
        }
      } catch (error) {
        cut = error;
      }
    } finally {
      stack.gateway.devnet.model.setLatency({ perTokenMs: 0 });
    }
    expect(cut).toBeInstanceOf(Error);
    await expect
      .poll(async () => (await stack.ownedBy(other)).length, { timeout: 10_000, interval: 100 })
      .toBe(1);
    // The killed replica's admission entry (limit 1) expires on its own (2 s here), then it serves.
    const again = await expect
      .poll(
        () =>
          stack
            .client(other)
            .chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 })
            .then(
              (c) => c.choices[0]?.message.content ?? '',
              (e: { status?: number }) => e.status,
            ),
        { timeout: 10_000, interval: 200 },
      )
      .toEqual(expect.any(String));
    void again;
    // Every stored nonce is contiguous (one write per nonce, fenced by the Postgres token).
    const diffs = await stack.storedDiffs(stack.escrows[0]!.id);
    expect(diffs.map((d) => d.nonce)).toEqual(diffs.map((_, i) => BigInt(i + 1)));
  });
});

export type { OpenAI };
