// Served-bytes check on the devnet (packages/devshard session/served-bytes.ts): the gateway hashes the
// model frames it received and compares them with the Finish's response_hash — `match` for an honest
// answer, `truncated` for a stream cut mid-way whose Finish (recovered from the executor's mempool)
// claims the full answer, `mismatch` for a Finish whose hash is not of the bytes served. Each verdict
// is in the InferenceResult, in a `served_bytes` event with both hashes, and counted per host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, serve, serveUntilNextTargets } from './chat-cases.js';
import { Gateway, smallestHost } from './harness.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

describe('served bytes vs the Finish', () => {
  it('records match, truncated and mismatch per request and per host', async () => {
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const host = smallestHost(escrow.group, 16)!;
    const session = await escrow.open();
    let i = 0;
    const next = () => chatCase(i++, ' served');
    const toHost = () => serveUntilNextTargets(session, (n) => escrow.executorOf(n), host, next);

    await toHost();
    const honest = await serve(session, chatCase(4, ' honest'));
    expect(honest.result).toMatchObject({ executor: host, status: 'completed', served: 'match' });

    await toHost();
    await gateway.devnet.devshardHosts.setFault(escrow.nameOf(host), { mode: 'cut-stream', remaining: 1 });
    const cut = await serve(session, chatCase(4, ' cut'));
    expect(cut.result).toMatchObject({
      executor: host,
      status: 'failed',
      finished: true,
      served: 'truncated',
    });

    await toHost();
    await gateway.devnet.devshardHosts.setFault(escrow.nameOf(host), {
      mode: 'tampered-finish',
      remaining: 1,
    });
    const lied = await serve(session, chatCase(4, ' tampered'));
    expect(lied.result).toMatchObject({
      executor: host,
      status: 'completed',
      finished: true,
      served: 'mismatch',
    });

    const verdicts = escrow.eventsOf('served_bytes').filter((e) => e.host === host);
    const byNonce = new Map(verdicts.map((e) => [e.inferenceId, e]));
    expect(byNonce.get(honest.result.nonce)?.verdict).toBe('match');
    const truncated = byNonce.get(cut.result.nonce)!;
    expect(truncated.verdict).toBe('truncated');
    expect(Buffer.from(truncated.claimed).equals(Buffer.from(truncated.received))).toBe(false);
    expect(byNonce.get(lied.result.nonce)?.verdict).toBe('mismatch');
    const counts = session.servedCounts().get(host)!;
    expect(counts.truncated).toBe(1);
    expect(counts.mismatch).toBe(1);
    expect(counts.match).toBeGreaterThanOrEqual(1);
    // Every other answer matched what its executor claimed.
    for (const e of escrow.eventsOf('served_bytes')) {
      if (e.inferenceId !== cut.result.nonce && e.inferenceId !== lied.result.nonce)
        expect(e.verdict).toBe('match');
    }
    expect(session.fault).toBeUndefined();
  }, 120_000);
});
