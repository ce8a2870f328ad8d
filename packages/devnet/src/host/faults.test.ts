import { decodeTx, InferenceStatus, recoverStateSigner } from '@gonka-gateway/devshard';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { type JsonBody, startTestDevnet } from '../testing/test-devnet.js';
import { chatBody, metaOf, receiptOf, TestUser } from '../testing/test-user.js';

// Issue item 6: every devshard host fault, switched at runtime per host.
describe('devshard host faults', () => {
  let devnet: Devnet;
  let user: TestUser;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    user = await TestUser.open(devnet);
    for (const address of user.hostAddresses) await user.chat(address); // bind everywhere
  });
  afterEach(() => devnet.devshardHosts.clearFaults());
  afterAll(() => devnet.close());

  /** The next inference's executor, its start diff and payload (not sent yet). */
  function nextInference(text: string, stream = false) {
    const { tx, payload } = user.start(chatBody(text, stream ? { stream: true } : {}));
    const diff = user.compose([tx]);
    return { diff, payload, executor: user.executorOf(diff.nonce) };
  }

  it('down: the server is stopped while the fault holds, with its sessions intact', async () => {
    const address = user.hostAddresses[1]!;
    const session = devnet.devshardHosts.session(address, user.row.id);
    await devnet.devshardHosts.setFault(address, { mode: 'down' });
    expect(devnet.participants.find((p) => p.address === address)!.running).toBe(false);
    await expect(fetch(user.url(address, 'mempool'))).rejects.toThrow();
    await devnet.devshardHosts.setFault(address, null);
    expect((await fetch(user.url(address, 'mempool'))).status).toBe(200);
    expect(devnet.devshardHosts.session(address, user.row.id)).toBe(session);
    // The same through the admin route.
    const admin = await fetch(`${devnet.urls.node}/devnet/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ devshardHosts: { [address]: { mode: 'down' } } }),
    });
    expect(admin.status).toBe(200);
    await devnet.devshardHosts.settled();
    await expect(fetch(user.url(address, 'mempool'))).rejects.toThrow();
    await fetch(`${devnet.urls.node}/devnet/admin/faults`, { method: 'DELETE' });
    await devnet.devshardHosts.settled();
    expect((await fetch(user.url(address, 'mempool'))).status).toBe(200);
  });

  it('refuse: the executor answers without a receipt and queues nothing', async () => {
    const { diff, payload, executor } = nextInference('refuse me');
    await devnet.devshardHosts.setFault(executor, { mode: 'refuse', remaining: 1 });
    const answer = await user.chat(executor, { payload });
    expect(answer.status).toBe(200);
    expect(receiptOf(answer)!.nonce).toBe(diff.nonce);
    expect(receiptOf(answer)!.receipt).toBeUndefined();
    expect(answer.modelLines).toEqual([]);
    expect(metaOf(answer)!.mempool).toEqual([]);
    expect(answer.done).toBe(true);
    // `remaining: 1` used up: the retry gets its receipt.
    const retry = await user.chat(executor, { payload, diffs: [diff] });
    expect(receiptOf(retry)!.receipt).toHaveLength(65);
    await user.tick();
  });

  it('stall-after-receipt: the receipt arrives, then nothing until the client leaves', async () => {
    const { diff, payload, executor } = nextInference('stall me', true);
    await devnet.devshardHosts.setFault(executor, { mode: 'stall-after-receipt', remaining: 1 });
    const chat = await user.openChat(executor, payload, '\n\n');
    expect(chat.answer.status).toBe(200);
    const { events, done, modelLines } = chat.answer;
    expect(events[0]?.type === 'receipt' && events[0].event.receipt?.length).toBe(65);
    expect(done).toBe(false);
    expect(modelLines).toEqual([]);
    const session = devnet.devshardHosts.session(executor, user.row.id)!;
    expect(session.executions.has(diff.nonce)).toBe(false);
    chat.abort();
    expect(session.mempool.has('finishInference', diff.nonce)).toBe(false);
    user.process(executor, chat.answer, diff.nonce);
    await user.tick(); // confirm it: Started, never finished (the execution-timeout case)
  });

  it('cut-stream: the stream breaks mid-way; the Finish still lands in the mempool', async () => {
    const { diff, payload, executor } = nextInference('cut me', true);
    await devnet.devshardHosts.setFault(executor, { mode: 'cut-stream', cutAfterFrames: 3 });
    const chat = await user.openChat(executor, payload, '[DONE]');
    expect(chat.failed || chat.ended).toBe(true);
    const { events, done, modelLines } = chat.answer;
    expect(done).toBe(false);
    expect(events.map((e) => e.type)).toEqual(['receipt']);
    expect(modelLines.length).toBeLessThanOrEqual(3);
    const mempool = (await (await fetch(user.url(executor, 'mempool'))).json()) as JsonBody;
    const kinds = (mempool.txs as string[]).map((b) => decodeTx(Buffer.from(b, 'base64')).tx);
    expect(kinds.some((t) => t.kind === 'finishInference' && t.msg.inferenceId === diff.nonce)).toBe(true);
    // The next contact delivers it: the inference finishes.
    user.process(executor, chat.answer, diff.nonce);
    await user.tick();
    const answer = await user.chat(executor);
    for (const bytes of metaOf(answer)?.mempool ?? []) user.queue(decodeTx(bytes));
    await user.tick();
    expect(user.state.inferences.get(diff.nonce)?.status).toBe(InferenceStatus.Finished);
  });

  it('rate-limit, unavailable and error answer every route before any work', async () => {
    const address = user.hostAddresses[0]!;
    const session = devnet.devshardHosts.session(address, user.row.id)!;
    const before = session.latestNonce;
    await devnet.devshardHosts.setFault(address, { mode: 'rate-limit', remaining: 2 });
    const limited = await user.chat(address, { diffs: user.catchUp(address) });
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.text)).toEqual({ message: 'rate limit exceeded' });
    expect((await fetch(user.url(address, 'mempool'))).status).toBe(429);
    expect((await fetch(user.url(address, 'mempool'))).status).toBe(200);
    await devnet.devshardHosts.setFault(address, { mode: 'unavailable', devshardError: 'initializing' });
    const unavailable = await user.chat(address);
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('x-devshard-error')).toBe('initializing');
    await devnet.devshardHosts.setFault(address, { mode: 'error', status: 502 });
    expect((await user.chat(address)).status).toBe(502);
    expect(session.latestNonce).toBe(before);
  });

  it('wrong-state-sig: signatures over a wrong root, in the receipt and in GET signatures', async () => {
    const address = user.hostAddresses[0]!;
    await devnet.devshardHosts.setFault(address, { mode: 'wrong-state-sig' });
    const answer = await user.chat(address);
    const receipt = receiptOf(answer)!;
    expect(receipt.stateHash).toEqual(devnet.devshardHosts.session(address, user.row.id)!.state.root);
    expect(recoverStateSigner(receipt.stateHash!, user.id, receipt.nonce, receipt.stateSig!)).not.toBe(
      address,
    );
    const query = async () =>
      Object.values(
        (
          (await (
            await fetch(`${user.url(address, 'signatures')}?nonce=${receipt.nonce}`)
          ).json()) as JsonBody
        ).signatures as Record<string, string>,
      ).map((s) => recoverStateSigner(receipt.stateHash!, user.id, receipt.nonce, Buffer.from(s, 'base64')));
    expect((await query()).every((a) => a !== address)).toBe(true);
    await devnet.devshardHosts.setFault(address, null);
    expect((await query()).every((a) => a === address)).toBe(true);
  });
});
