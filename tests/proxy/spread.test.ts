// Two proxy replicas as real processes and two escrows of one model: the escrows spread one per
// replica (the claim loop's spreading, escrow-runtime claim/fair-share.ts), also when the first
// replica started alone and owned both, so a request is served by the replica it lands on and none is
// forwarded (architecture §2.4). The forwarded share is read from /metrics as a bench would:
// forwarded_requests_total over requests_total, summed over the replicas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

let stack: ProxyStack;
let first: ProcessReplica;
let second: ProcessReplica;

/** Sum of every series of a counter in a replica's /metrics. */
async function counter(replica: ProcessReplica, name: string): Promise<number> {
  const text = await (await fetch(`${replica.url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)$`, 'gm'))) {
    sum += Number(m[1]);
  }
  return sum;
}

beforeAll(async () => {
  stack = await ProxyStack.start(2);
  first = await stack.startProcess('first');
  await waitFor('the first replica owns both escrows', async () => (await stack.ownedBy(first)).length === 2);
  second = await stack.startProcess('second');
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

describe('escrows spread over replicas', () => {
  it('gives each of two replicas one of two escrows, and then no request is forwarded', async () => {
    await waitFor(
      'one escrow per replica',
      async () => (await stack.ownedBy(first)).length === 1 && (await stack.ownedBy(second)).length === 1,
    );
    const replicas = [first, second];
    const before = await Promise.all(
      replicas.map(async (r) => ({
        forwarded: await counter(r, 'devshard_gateway_forwarded_requests_total'),
        served: await counter(r, 'devshard_gateway_requests_total'),
      })),
    );
    // Round robin, as a load balancer would.
    for (let i = 0; i < 6; i++) {
      const completion = await stack.client(replicas[i % 2]!).chat.completions.create({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: `request ${i}` }],
        max_tokens: 8,
      });
      expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    }
    let forwarded = 0;
    let served = 0;
    for (const [i, r] of replicas.entries()) {
      forwarded += (await counter(r, 'devshard_gateway_forwarded_requests_total')) - before[i]!.forwarded;
      served += (await counter(r, 'devshard_gateway_requests_total')) - before[i]!.served;
    }
    expect(served).toBe(6);
    expect(forwarded / served).toBe(0);
    // Still one each: nothing moved while serving.
    expect((await stack.ownedBy(first)).length).toBe(1);
    expect((await stack.ownedBy(second)).length).toBe(1);
  });
});
