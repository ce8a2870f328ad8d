import {
  decodeTx,
  diffToWire,
  InferenceStatus,
  parseJsonLossless,
  signRequest,
} from '@gonka-gateway/devshard';
import { decodeDevshardEvent, encodeInferenceRequest } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { account, type JsonBody, startTestDevnet } from '../testing/test-devnet.js';
import { chatBody, receiptOf, signTestDiff, TestUser } from '../testing/test-user.js';

const enc = new TextEncoder();
const request = (user: TestUser, extra: { nonce?: bigint } = {}) =>
  enc.encode(encodeInferenceRequest({ diffs: [], nonce: extra.nonce ?? user.state.latestNonce }));

// Authentication, routing and apply errors of the host routes (§4.1).
describe('devshard host routes', () => {
  let devnet: Devnet;
  let user: TestUser;
  let host: string;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    user = await TestUser.open(devnet);
    host = user.hostAddresses[0]!;
  });
  afterAll(() => devnet.close());

  it('answers 401 without a usable signature and 403 to anyone but the creator', async () => {
    const body = request(user);
    const plain = await fetch(user.url(host, 'chat/completions'), { method: 'POST', body });
    expect(plain.status).toBe(401);
    const now = user.now();
    const upper = await fetch(user.url(host, 'chat/completions'), {
      method: 'POST',
      body,
      headers: { 'x-devshard-signature': 'AB'.repeat(65), 'x-devshard-timestamp': now.toString() },
    });
    expect(upper.status).toBe(401);
    // The host clock is real time in whole seconds, so each case reads it afresh and keeps off the
    // ±30 s edge by a margin a loaded machine cannot cross; the exact edge is request-auth.test.ts's.
    const at = (offset: bigint) => ({ timestamp: user.now() + offset });
    expect((await user.post(host, 'chat/completions', body, at(-45n))).status).toBe(401);
    expect((await user.post(host, 'chat/completions', body, at(45n))).status).toBe(401);
    expect((await user.post(host, 'chat/completions', body, at(-25n))).status).toBe(200);

    // A signature over other bytes recovers to some other address: not the owner.
    const forged = await fetch(user.url(host, 'chat/completions'), {
      method: 'POST',
      body,
      headers: {
        'x-devshard-signature': signRequest(user.key, user.id, enc.encode('{}'), now),
        'x-devshard-timestamp': now.toString(),
      },
    });
    expect(forged.status).toBe(403);
    expect(await forged.json()).toEqual({ message: 'restricted to escrow owner' });
    const outsider = await user.post(host, 'chat/completions', body, {
      key: account(devnet, 'outsider').key,
    });
    expect(outsider.status).toBe(403);
    // A group member may not chat either (creator only), but may call verify-timeout.
    const member = devnet.participants.find((p) => p.address === host)!;
    expect((await user.post(host, 'chat/completions', body, { key: member.key })).status).toBe(403);
  });

  it('routes: canonical id (400), unknown escrow (404), unknown version (404), bound version (409)', async () => {
    const body = request(user);
    for (const id of ['01', '+1', '1.0', '18446744073709551616']) {
      const res = await user.post(host, 'chat/completions', body, { id });
      expect(res.status, id).toBe(400);
    }
    const missing = await user.post(host, 'chat/completions', body, { id: '999' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: 'session not found' });
    expect((await user.post(host, 'chat/completions', body, { version: 'v9' })).status).toBe(404);
    // The session is bound to v5 (first call above): v4, although approved, conflicts.
    expect((await user.post(host, 'chat/completions', body, { version: 'v4' })).status).toBe(409);
    expect((await fetch(user.url(host, 'mempool', 'v4'))).status).toBe(409);
    // An unbound session has nothing to query; once bound, the queries answer.
    const other = user.hostAddresses.find((a) => devnet.devshardHosts.session(a, user.row.id) === undefined);
    if (other) expect((await fetch(user.url(other, 'mempool'))).status).toBe(404);
    expect(await (await fetch(user.url(host, 'mempool'))).json()).toEqual({ txs: [] });
  });

  it('refuses envelopes (503 not_implemented), a top-level message (400) and bad JSON (400)', async () => {
    const envelope = await user.post(host, 'chat/completions', new Uint8Array([0x0a, 0x01, 0x08]));
    expect(envelope.status).toBe(503);
    expect(envelope.headers.get('x-devshard-error')).toBe('not_implemented');
    const message = await user.post(
      host,
      'chat/completions',
      enc.encode('{"message":"x","diffs":[],"nonce":0}'),
    );
    expect(message.status).toBe(400);
    expect((await user.post(host, 'chat/completions', enc.encode('{"diffs":'))).status).toBe(400);
    expect((await user.post(host, 'chat/completions', enc.encode('{"diffs":[],"nonce":-1}'))).status).toBe(
      400,
    );
  });

  it('rejects a diff not signed by the creator with 500 and keeps its state', async () => {
    const session = () => devnet.devshardHosts.session(host, user.row.id)!;
    const before = session().state;
    const next = user.compose();
    const forged = signTestDiff(account(devnet, 'creator-1').key, user.id, next);
    const res = await user.chat(host, { diffs: [...user.catchUp(host, next.nonce - 1n), forged] });
    expect(res.status).toBe(500);
    expect((JSON.parse(res.text) as JsonBody).message).toContain('invalid user signature');
    expect(session().state).toBe(before);
    // A gap is refused the same way, and so is a tampered diff (strict decoding, §10).
    const gap = await user.chat(host, {
      diffs: [signTestDiff(user.key, user.id, { ...next, nonce: next.nonce + 1n })],
    });
    expect(gap.status).toBe(500);
    const wire = diffToWire(next);
    const tampered = { ...wire, txs: Uint8Array.from([...wire.txs, 0]) };
    const body = enc.encode(encodeInferenceRequest({ diffs: [tampered], nonce: next.nonce }));
    expect((await user.post(host, 'chat/completions', body)).status).toBe(500);
    expect(session().state).toBe(before);
    // The genuine diff is accepted afterwards.
    const ok = await user.chat(host);
    expect(ok.status).toBe(200);
    expect(receiptOf(ok)!.nonce).toBe(next.nonce);
    expect(session().state.root).toEqual(user.state.root);
  });

  it('gives no receipt when the payload does not match the signed start', async () => {
    const prompt = chatBody('mismatch me');
    const variants = [
      (p: ReturnType<TestUser['start']>['payload']) => ({ ...p, prompt: chatBody('something else') }),
      (p: ReturnType<TestUser['start']>['payload']) => ({ ...p, model: 'qwen' }),
      (p: ReturnType<TestUser['start']>['payload']) => ({ ...p, startedAt: p.startedAt * 1000n }),
      (p: ReturnType<TestUser['start']>['payload']) => ({ ...p, maxTokens: p.maxTokens + 1n }),
      (p: ReturnType<TestUser['start']>['payload']) => ({ ...p, inputLength: 1n }),
    ];
    for (const change of variants) {
      const { tx, payload } = user.start(prompt);
      const diff = user.compose([tx]);
      const executor = user.executorOf(diff.nonce);
      const answer = await user.chat(executor, { payload: change(payload) });
      expect(answer.status).toBe(200);
      expect(receiptOf(answer)!.receipt).toBeUndefined();
      expect(answer.modelLines).toEqual([]);
      expect(answer.done).toBe(true); // a payload send always ends with [DONE]
      expect(devnet.devshardHosts.session(executor, user.row.id)!.mempool.size).toBe(0);
      expect(user.state.inferences.get(diff.nonce)!.status).toBe(InferenceStatus.Pending);
    }
    // The same payload unchanged, but without its diff in the request: no receipt either (§10 item 3).
    const { tx, payload } = user.start(prompt);
    const diff = user.compose([tx]);
    const executor = user.executorOf(diff.nonce);
    await user.chat(executor, { diffs: user.catchUp(executor, diff.nonce - 1n), nonce: diff.nonce - 1n });
    const missing = await user.chat(executor, { diffs: [], payload, nonce: diff.nonce });
    expect(receiptOf(missing)!.receipt).toBeUndefined();
    // Delivered with the diff, the receipt comes.
    const ok = await user.chat(executor, { payload });
    expect(receiptOf(ok)!.receipt).toHaveLength(65);
  });

  it('serves GET diffs (flat §4.3 shape with state_hash), signatures and mempool', async () => {
    const records = (await (await fetch(`${user.url(host, 'diffs')}?from=1&to=3`)).json()) as JsonBody[];
    const session = devnet.devshardHosts.session(host, user.row.id)!;
    expect(records.map((r) => r.nonce)).toEqual([1, 2, 3].slice(0, Math.min(3, Number(session.latestNonce))));
    for (const r of records) {
      expect(Object.keys(r).sort()).toEqual(['nonce', 'post_state_root', 'state_hash', 'txs', 'user_sig']);
      expect(Buffer.from(r.state_hash, 'base64')).toEqual(Buffer.from(session.rootAt(BigInt(r.nonce))!));
    }
    expect((await fetch(`${user.url(host, 'diffs')}?from=1&to=5000`)).status).toBe(400);
    expect((await fetch(`${user.url(host, 'diffs')}?from=x&to=2`)).status).toBe(400);
    expect((await fetch(`${user.url(host, 'signatures')}?nonce=01`)).status).toBe(400);
    const far = (await (await fetch(`${user.url(host, 'signatures')}?nonce=999999`)).json()) as JsonBody;
    expect(far).toEqual({ signatures: {} });
    const mempool = parseJsonLossless(await (await fetch(user.url(host, 'mempool'))).text()) as JsonBody;
    for (const b64 of mempool.txs as string[]) {
      expect(['confirmStart', 'finishInference']).toContain(decodeTx(Buffer.from(b64, 'base64')).tx.kind);
    }
  });

  it('answers 503 requests_disabled for new work while devshard requests are disabled', async () => {
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.devshardRequestsEnabled = false;
    });
    try {
      const { tx, payload } = user.start(chatBody('blocked'));
      const diff = user.compose([tx]);
      const res = await user.chat(user.executorOf(diff.nonce), { payload });
      expect(res.status).toBe(503);
      expect(res.headers.get('x-devshard-error')).toBe('requests_disabled');
    } finally {
      devnet.chain.updateParams((p) => {
        p.devshardEscrow.devshardRequestsEnabled = true;
      });
    }
  });

  it('parses the receipt event as the first data line of the stream', async () => {
    const res = await user.post(host, 'chat/completions', request(user));
    const first = (await res.text()).split('\n\n')[0]!;
    expect(first.startsWith('data: {"devshard_receipt":')).toBe(true);
    expect(decodeDevshardEvent(first.slice(6)).type).toBe('receipt');
  });
});
