// Redis restarted empty (a private redis-server on a fixed port, stopped and started again) →
// leases are re-claimed, the pool state is published again, admission starts over, and requests
// through the proxy succeed again within seconds.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { type PrivateRedis, startPrivateRedis } from '@gonka-gateway/escrow-runtime/testing';
import { closeRedis, openRedis } from '@gonka-gateway/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

let server: PrivateRedis;
let restarted: ReturnType<typeof spawn> | undefined;
let stack: ProxyStack;
let replica: InProcessReplica;
const messages = [{ role: 'user' as const, content: 'Tell me about restarts' }];

beforeAll(async () => {
  server = await startPrivateRedis();
  const redis = openRedis(server.url);
  stack = await ProxyStack.start(1, {
    redis: { url: server.url, prefix: 'rr:', redis, cleanup: () => closeRedis(redis) },
  });
  replica = await stack.startInProcess('survivor');
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
}, 90_000);

afterAll(async () => {
  await stack?.close();
  restarted?.kill('SIGTERM');
  await server?.stop();
});

describe('Redis restarted', () => {
  it('requests recover within seconds', async () => {
    const client = stack.client(replica);
    expect(
      (await client.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 })).object,
    ).toBe('chat.completion');
    const token = async () => {
      const [row] = await stack.storeSql<{ t: string }[]>`select fencing_token::text as t from session_heads`;
      return BigInt(row!.t);
    };
    const before = await token();
    await server.stop();
    restarted = spawn(
      'redis-server',
      ['--port', String(server.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await once(restarted, 'spawn');
    await expect
      .poll(
        () =>
          client.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 }).then(
            (c) => c.object,
            (e: Error) => e.message,
          ),
        { timeout: 15_000, interval: 250 },
      )
      .toBe('chat.completion');
    // The lease vanished with Redis: the escrow was claimed again (a new Postgres fencing token)…
    await expect.poll(token, { timeout: 15_000, interval: 200 }).toBeGreaterThan(before);
    await waitFor('the escrow serving again', async () => (await stack.ownedBy(replica)).length === 1);
    // …and serves on the new lease.
    const again = await client.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 });
    expect(again.object).toBe('chat.completion');
    const diffs = await stack.storedDiffs(stack.escrows[0]!.id);
    expect(diffs.map((d) => d.nonce)).toEqual(diffs.map((_, i) => BigInt(i + 1)));
  });
});
