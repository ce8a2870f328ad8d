// Concurrent sends to one host (devshard-protocol.md §7.1–§7.2): a host lists its whole mempool in
// every meta event, so the Confirm and Finish of inference A can reach the session through the answer
// to a later request B (and be applied) before A's own answer is read. The session must stay
// consistent and keep reporting A correctly.
import { InferenceStatus } from '@gonka-gateway/devshard';
import type { UserSession } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, type Served, serve, serveUntilNextTargets } from './chat-cases.js';
import { Gateway, type TestEscrow } from './harness.js';
import { RecordingTransport } from './recording-transport.js';
import { settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

/** Yields to the event loop until `ready()` (bounded: a broken run fails instead of hanging). */
async function until(ready: () => boolean, what: string): Promise<void> {
  for (let spins = 0; !ready(); spins++) {
    if (spins > 100_000) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Inference A goes to host H, which answers at once, but its answer reaches the session late. Before
 * it does, request B also goes to H, whose meta event carries A's Confirm and Finish, and a flush
 * applies them. Then A's answer is read.
 */
async function lateAnswer(): Promise<{ escrow: TestEscrow; session: UserSession; a: Served }> {
  const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
  const host = escrow.hosts[0]!;
  let recorder: RecordingTransport | undefined;
  const session = await escrow.open({ wrapTransport: (t) => (recorder = new RecordingTransport(t)) });
  let i = 0;
  const next = () => chatCase(i++, ' late');
  await serveUntilNextTargets(session, (n) => escrow.executorOf(n), host, next);

  const aNonce = session.latestNonce + 1n;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  recorder!.holdAnswer = (send) => (send.payload && send.nonce === aNonce ? gate : undefined);
  const answerA = serve(session, next());
  // H has run A (zero model latency): its Confirm and Finish wait in H's mempool.
  const replica = () => gateway.devnet.devshardHosts.session(host, escrow.id);
  await until(() => replica()?.executions.get(aNonce)?.phase === 'done', 'H executed A');

  await serveUntilNextTargets(session, (n) => escrow.executorOf(n), host, next);
  const b = await serve(session, next());
  expect(b.result).toMatchObject({ executor: host, status: 'completed', confirmed: true, finished: true });
  await session.flush();
  expect(session.state.inferences.get(aNonce)?.status).toBe(InferenceStatus.Finished);

  release();
  const a = await answerA;
  expect(a.result.nonce).toBe(aNonce);
  return { escrow, session, a };
}

describe('an answer read after its Confirm arrived through another answer', () => {
  it('leaves the session consistent: A completes, confirmed and finished once, and the money settles', async () => {
    const { escrow, session, a } = await lateAnswer();
    expect(a.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    expect(a.done).toEqual(['data: [DONE]']);
    expect(escrow.eventsOf('divergence')).toEqual([]);
    expect(session.fault).toBeUndefined();
    const fin = await session.finalize();
    escrow.expectHostsInSync(session);
    await settleAndCheck(escrow, session, fin);
  }, 60_000);

  // When the same Confirm came earlier through another answer's meta event and a diff already
  // applied it, this receipt queues nothing new, yet the inference is confirmed: onReceipt must
  // say so, or a proxy would read an accepted, streaming inference as refused.
  it('reports onReceipt confirmed: true for the late receipt', async () => {
    const { a } = await lateAnswer();
    expect(a.receipts).toEqual([{ nonce: a.result.nonce, confirmed: true }]);
  }, 60_000);
});
