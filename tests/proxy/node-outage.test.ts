// Takeover and restart while the public node and the chain REST answer 503 (devnet faults), across
// real proxy processes: the owner of the escrow is SIGKILLed (by pid) and the other replica opens the
// escrow's session from the participants the owner stored in Postgres (escrow_hosts), logging the
// marker `node_unreachable_stored_copy` and counting it; then that replica is killed too and a replica
// started during the outage takes the escrow over the same way (docs/operator-guide.md "When the
// public node is down").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessReplica, ProxyStack, QWEN_MODEL, type Replica, waitFor } from './proxy-stack.js';

let stack: ProxyStack;
const messages = [{ role: 'user' as const, content: 'Tell me about outages' }];

async function storedCopies(replica: Replica): Promise<number> {
  const text = await (await fetch(`${replica.url}/metrics`)).text();
  const m = /^devshard_gateway_node_stored_copy_total\{what="participants"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

const chat = (replica: Replica) =>
  stack
    .client(replica)
    .chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 32 })
    .then(
      (c) => c.object,
      (e: Error) => e.message,
    );

beforeAll(async () => {
  stack = await ProxyStack.start(1);
}, 120_000);

afterAll(async () => {
  stack?.gateway.devnet.faults.clear();
  await stack?.close();
});

describe('the public node and the chain REST down', () => {
  it('a replica takes over the escrow of a killed owner, and a replica started during the outage does too, from the stored participants', async () => {
    const owner = await stack.startProcess('owner');
    await waitFor('the owner owns the escrow', async () => (await stack.ownedBy(owner)).length === 1);
    expect(await chat(owner), owner.proc.output()).toBe('chat.completion');
    const escrowId = stack.escrows[0]!.id;
    const stored = async () =>
      Number(
        (
          await stack.storeSql<{ n: string }[]>`
            select count(*)::text as n from escrow_hosts where escrow_id = ${escrowId.toString()}::numeric`
        )[0]!.n,
      );
    await waitFor('the participants stored', async () => (await stored()) > 0);
    const other = await stack.startProcess('other');

    stack.gateway.devnet.faults.set({ nodeQuery: { status: 503 }, chainQuery: { status: 503 } });
    expect((await fetch(`${stack.gateway.devnet.urls.node}/v1/epochs/current/participants`)).status).toBe(
      503,
    );

    // The owner dies: the other replica opens the session without the node.
    process.kill(owner.proc.child.pid!, 'SIGKILL');
    await owner.proc.exited;
    await expect.poll(() => chat(other), { timeout: 20_000, interval: 250 }).toBe('chat.completion');
    expect(await stack.ownedBy(other)).toEqual([escrowId.toString()]);
    expect(await storedCopies(other)).toBeGreaterThan(0);
    expect(other.proc.output()).toMatch(/"marker":"node_unreachable_stored_copy"/);

    // A replica started while the node is still down takes it over after the other one dies too.
    const restarted: ProcessReplica = await stack.startProcess('restarted');
    process.kill(other.proc.child.pid!, 'SIGKILL');
    await other.proc.exited;
    await expect.poll(() => chat(restarted), { timeout: 20_000, interval: 250 }).toBe('chat.completion');
    expect(await stack.ownedBy(restarted)).toEqual([escrowId.toString()]);
    expect(await storedCopies(restarted)).toBeGreaterThan(0);

    // The node answers again: serving goes on, and the stored copy is confirmed from its answer.
    const confirmed = async () =>
      (
        await stack.storeSql<{ at: Date }[]>`
          select min(confirmed_at) as at from escrow_hosts where escrow_id = ${escrowId.toString()}::numeric`
      )[0]!.at.getTime();
    const confirmedBefore = await confirmed();
    stack.gateway.devnet.faults.clear();
    expect(await chat(restarted)).toBe('chat.completion');
    await expect
      .poll(
        async () => (await chat(restarted)) === 'chat.completion' && (await confirmed()) > confirmedBefore,
        {
          timeout: 20_000,
          interval: 500,
        },
      )
      .toBe(true);
    // The diffs of the three owners form one chain of nonces.
    const diffs = await stack.storedDiffs(escrowId);
    expect(diffs.map((d) => d.nonce)).toEqual(diffs.map((_, i) => BigInt(i + 1)));
  });
});
