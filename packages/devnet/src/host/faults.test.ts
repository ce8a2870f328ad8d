import { sha256 } from '@gonka-gateway/chain';
import { decodeTx, diffToWire, InferenceStatus, recoverStateSigner } from '@gonka-gateway/devshard';
import { encodeInferenceRequest } from '@gonka-gateway/devshard/session';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Devnet } from '../devnet.js';
import { type JsonBody, startTestDevnet } from '../testing/test-devnet.js';
import { type ChatAnswer, chatBody, metaOf, receiptOf, TestUser } from '../testing/test-user.js';

// Every devshard host fault, switched at runtime per host.
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

  /** The Finish of inference `id` in an answer's meta event. */
  function finishOf(answer: ChatAnswer, id: bigint) {
    for (const bytes of metaOf(answer)?.mempool ?? []) {
      const { tx } = decodeTx(bytes);
      if (tx.kind === 'finishInference' && tx.msg.inferenceId === id) return tx.msg;
    }
    return undefined;
  }

  /** sha256 of the model lines as served (`data: …` and the blank line). */
  const servedHash = (answer: ChatAnswer) =>
    sha256(new TextEncoder().encode(answer.modelLines.map((l) => `data: ${l}\n\n`).join('')));

  const postFaults = (body: unknown) =>
    fetch(`${devnet.urls.node}/devnet/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

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

  it('slow: the receipt, the first frame not before firstTokenMs, then a whole answer and its Finish', async () => {
    const { diff, payload, executor } = nextInference('slow me', true);
    const fault = { mode: 'slow', firstTokenMs: 300, perTokenMs: 5, remaining: 1 } as const;
    await devnet.devshardHosts.setFault(executor, fault);
    const started = performance.now();
    const answer = await user.chat(executor, { payload, stream: true });
    const elapsed = performance.now() - started;
    expect(answer.events.map((e) => e.type)).toEqual(['receipt', 'meta']);
    expect(receiptOf(answer)!.receipt).toHaveLength(65);
    expect(answer.done).toBe(true);
    // Role, one frame per token, finish_reason (no usage asked for).
    const tokens = answer.modelLines.length - 2;
    expect(tokens).toBeGreaterThan(0);
    // A lower bound only (a timer may fire a millisecond early against performance.now).
    expect(elapsed).toBeGreaterThanOrEqual(fault.firstTokenMs + fault.perTokenMs * (tokens - 1) - 5);
    expect(finishOf(answer, diff.nonce)?.responseHash).toEqual(servedHash(answer));
    expect(devnet.faults.hostFault(executor)).toBeUndefined(); // `remaining: 1` used up
    await user.tick();
    expect(user.state.inferences.get(diff.nonce)?.status).toBe(InferenceStatus.Finished);
  });

  it('slow: a client that leaves ends the wait; the execution completes into the mempool', async () => {
    const { diff, payload, executor } = nextInference('slow, then gone', true);
    await devnet.devshardHosts.setFault(executor, { mode: 'slow', remaining: 1 }); // 20 s to the first frame
    const chat = await user.openChat(executor, payload, '\n\n');
    expect(chat.answer.events.map((e) => e.type)).toEqual(['receipt']);
    expect(chat.answer.modelLines).toEqual([]);
    const session = devnet.devshardHosts.session(executor, user.row.id)!;
    expect(session.mempool.has('finishInference', diff.nonce)).toBe(false);
    chat.abort();
    await vi.waitFor(() => expect(session.mempool.has('finishInference', diff.nonce)).toBe(true), {
      timeout: 2_000,
      interval: 20,
    });
    // The next contacts deliver the Confirm, then the Finish.
    user.process(executor, chat.answer, diff.nonce);
    await user.tick();
    const answer = await user.chat(executor);
    for (const bytes of metaOf(answer)?.mempool ?? []) user.queue(decodeTx(bytes));
    await user.tick();
    expect(user.state.inferences.get(diff.nonce)?.status).toBe(InferenceStatus.Finished);
  });

  it('empty-after-receipt: a receipt, no frame, [DONE]; the Finish covers the empty output', async () => {
    const { diff, payload, executor } = nextInference('say nothing', true);
    await devnet.devshardHosts.setFault(executor, { mode: 'empty-after-receipt', remaining: 1 });
    const answer = await user.chat(executor, { payload, stream: true });
    expect(answer.status).toBe(200);
    expect(answer.events.map((e) => e.type)).toEqual(['receipt', 'meta']);
    expect(receiptOf(answer)!.receipt).toHaveLength(65);
    expect(answer.modelLines).toEqual([]);
    expect(answer.done).toBe(true);
    const finish = finishOf(answer, diff.nonce)!;
    expect(finish.responseHash).toEqual(sha256(new Uint8Array(0)));
    expect(finish.outputTokens).toBe(0n);
    expect(finish.inputTokens).toBeGreaterThan(0n);
    expect(devnet.faults.hostFault(executor)).toBeUndefined();
    await user.tick();
    const record = user.state.inferences.get(diff.nonce);
    expect(record?.status).toBe(InferenceStatus.Finished);
    expect(record?.outputTokens).toBe(0n);
  });

  it('error-event: a receipt, one OpenAI error line, meta and [DONE]; no Finish ever', async () => {
    const first = nextInference('far too long', true);
    await devnet.devshardHosts.setFault(first.executor, {
      mode: 'error-event',
      status: 400,
      message: 'context length exceeded',
      remaining: 1,
    });
    const answer = await user.chat(first.executor, { payload: first.payload, stream: true });
    expect(answer.events.map((e) => e.type)).toEqual(['receipt', 'meta']);
    expect(receiptOf(answer)!.receipt).toHaveLength(65);
    expect(answer.modelLines).toEqual([
      JSON.stringify({
        error: { message: 'context length exceeded', type: 'invalid_request_error', code: 400, status: 400 },
      }),
    ]);
    expect(answer.done).toBe(true);
    expect(finishOf(answer, first.diff.nonce)).toBeUndefined();
    const session = devnet.devshardHosts.session(first.executor, user.row.id)!;
    expect(session.executions.has(first.diff.nonce)).toBe(false);
    expect(session.mempool.has('finishInference', first.diff.nonce)).toBe(false);
    expect(devnet.faults.hostFault(first.executor)).toBeUndefined();
    await user.tick(); // confirm it: Started, never finished (the execution-timeout case)
    expect(user.state.inferences.get(first.diff.nonce)?.status).toBe(InferenceStatus.Started);

    // The defaults, set through the admin route (whose schema checks the new fields).
    expect((await postFaults({ devshardHosts: { x: { mode: 'slow', firstTokenMs: -1 } } })).status).toBe(400);
    expect((await postFaults({ devshardHosts: { x: { mode: 'error-event', message: 5 } } })).status).toBe(
      400,
    );
    const second = nextInference('upstream down', true);
    const admin = await postFaults({
      devshardHosts: { [second.executor]: { mode: 'error-event', remaining: 1 } },
    });
    expect(admin.status).toBe(200);
    const failed = await user.chat(second.executor, { payload: second.payload, stream: true });
    expect(failed.modelLines.map((l) => JSON.parse(l))).toEqual([
      { error: { message: 'upstream model error', type: 'api_error', code: 500, status: 500 } },
    ]);
    expect(finishOf(failed, second.diff.nonce)).toBeUndefined();
    expect(devnet.faults.hostFault(second.executor)).toBeUndefined();
    await user.tick();
  });

  it('hang-before-headers: no status line and nothing applied until the client leaves', async () => {
    const { diff, payload, executor } = nextInference('hang me');
    await devnet.devshardHosts.setFault(executor, { mode: 'hang-before-headers', remaining: 2 });
    const session = devnet.devshardHosts.session(executor, user.row.id)!;
    const before = session.latestNonce;
    const body = () =>
      new TextEncoder().encode(
        encodeInferenceRequest({
          diffs: user.catchUp(executor).map(diffToWire),
          nonce: diff.nonce,
          payload,
        }),
      );
    // fetch resolves on the status line and headers: it never does, the client gives up.
    const aborted = user.post(executor, 'chat/completions', body(), { signal: AbortSignal.timeout(300) });
    await expect(aborted).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(session.latestNonce).toBe(before);
    expect(session.mempool.has('confirmStart', diff.nonce)).toBe(false);
    // A hung request does not hold the server open: taking the host down ends its connection.
    const hung = user.post(executor, 'chat/completions', body()).then(
      () => 'answered',
      () => 'ended',
    );
    await vi.waitFor(() => expect(devnet.faults.hostFault(executor)).toBeUndefined(), { interval: 10 });
    await devnet.devshardHosts.setFault(executor, { mode: 'down' });
    expect(await hung).toBe('ended');
    await devnet.devshardHosts.setFault(executor, null);
    expect(session.latestNonce).toBe(before);
    // `remaining: 2` used up: the same request now goes through.
    const answer = await user.chat(executor, { payload });
    expect(answer.status).toBe(200);
    expect(receiptOf(answer)!.receipt).toHaveLength(65);
    expect(answer.modelLines.length).toBeGreaterThan(0);
    expect(answer.done).toBe(true);
    await user.tick();
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
