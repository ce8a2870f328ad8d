// A replica that owns nothing for the model forwards to an owner; when an owner is killed without a
// goodbye (SIGKILL), it stays in the pool until its lease expires. Forwards that the dead owner never
// read (connection refused) go to the live owner instead of answering 503 for the rest of the lease
// (apps/proxy chat/forward-to-owner.ts, UnreachableOwners).
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StatusBody } from './proxy-stack.js';
import { type ProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

let stack: ProxyStack;
let a: ProcessReplica;
let b: ProcessReplica;
let c: ProcessReplica;
const messages = [{ role: 'user' as const, content: 'Tell me about fallbacks' }];

const statusOf = async (r: ProcessReplica) =>
  (await (await fetch(`${r.url}/v1/status`)).json()) as StatusBody;

beforeAll(async () => {
  // Two escrows over three replicas: a and b own one each (share ceil(2/3) = 1), c owns none.
  stack = await ProxyStack.start(2);
  a = await stack.startProcess('a');
  await waitFor('a owns an escrow', async () => (await stack.ownedBy(a)).length >= 1);
  b = await stack.startProcess('b');
  await waitFor('a and b own one escrow each', async () => {
    return (await stack.ownedBy(a)).length === 1 && (await stack.ownedBy(b)).length === 1;
  });
  c = await stack.startProcess('c');
  await waitFor('c sees both owners', async () => {
    const status = await statusOf(c);
    const owners = new Set(status.devshards.map((d) => d.owner));
    return status.replicas.length === 3 && owners.has(a.replicaId) && owners.has(b.replicaId);
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

it('requests on the replica owning nothing reach the live owner while the killed owner is still in the pool', async () => {
  expect(await stack.ownedBy(c)).toEqual([]);
  process.kill(a.proc.child.pid!, 'SIGKILL');
  if (a.proc.child.exitCode === null && a.proc.child.signalCode === null) {
    await new Promise((r) => a.proc.child.once('exit', r));
  }
  // Within the dead owner's lease (1.5 s here) c still routes half of the model's weight to it.
  const stillListed = (await statusOf(c)).devshards.some((d) => d.owner === a.replicaId);
  const client = stack.client(c);
  const statuses: (number | string)[] = [];
  for (let i = 0; i < 6; i++) {
    statuses.push(
      await client.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 16 }).then(
        () => 200,
        (e: { status?: number; message?: string }) => e.status ?? String(e.message),
      ),
    );
  }
  expect(stillListed).toBe(true);
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
});
