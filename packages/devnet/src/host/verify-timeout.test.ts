import type { PrivateKey } from '@gonka-gateway/chain';
import {
  decodeTx,
  diffToWire,
  encodeDiffWire,
  InferenceStatus,
  newMsg,
  type PayloadWire,
  parseJsonLossless,
  recoverTimeoutVoter,
  stringifyJsonLossless,
  TimeoutReason,
  txOf,
} from '@gonka-gateway/devshard';
import { encodePayload } from '@gonka-gateway/devshard/session';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { account, type JsonBody, startTestDevnet } from '../testing/test-devnet.js';
import { chatBody, receiptOf, signTestDiff, TestUser } from '../testing/test-user.js';

interface Vote {
  address: string;
  body: JsonBody;
}

// POST verify-timeout, both reasons, accepting and rejecting (§4.3, §7.4).
describe('devshard hosts: verify-timeout', () => {
  let devnet: Devnet;
  let user: TestUser;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    user = await TestUser.open(devnet);
  });
  afterEach(() => devnet.devshardHosts.clearFaults());
  afterAll(() => devnet.close());

  const seconds = (s: bigint) => devnet.blocks.advanceTime(Number(s) * 1000);

  /** The spec's VerifyTimeoutRequest JSON, built from devshard's wire encoders. */
  function verifyBody(id: bigint, reason: 'refused' | 'execution', address: string, payload?: PayloadWire) {
    const diffs = user.catchUp(address).map((d) => parseJsonLossless(encodeDiffWire(diffToWire(d))));
    return new TextEncoder().encode(
      stringifyJsonLossless({
        inference_id: id,
        reason,
        payload: payload ? parseJsonLossless(encodePayload(payload)) : undefined,
        diffs,
      }),
    );
  }

  async function askVoters(
    id: bigint,
    reason: 'refused' | 'execution',
    payload?: PayloadWire,
    key?: PrivateKey,
  ): Promise<Vote[]> {
    const executor = user.executorOf(id);
    const voters = user.hostAddresses.filter((a) => a !== executor);
    return Promise.all(
      voters.map(async (address) => {
        const res = await user.post(address, 'verify-timeout', verifyBody(id, reason, address, payload), {
          ...(key ? { key } : {}),
        });
        expect(res.status).toBe(200);
        user.hostSync.set(address, user.state.latestNonce);
        return { address, body: parseJsonLossless(await res.text()) as JsonBody };
      }),
    );
  }

  function timeoutTx(id: bigint, reason: number, votes: Vote[]) {
    return txOf.timeoutInference(
      newMsg.timeoutInference({
        inferenceId: id,
        reason,
        votes: votes.map((v) =>
          newMsg.vote({
            voterSlot: Number(v.body.voter_slot),
            accept: true,
            signature: Buffer.from(v.body.signature as string, 'base64'),
          }),
        ),
      }),
    );
  }

  async function startWithFault(
    text: string,
    fault: 'refuse' | 'stall-after-receipt' | null,
    remaining?: number,
  ) {
    const { tx, payload } = user.start(chatBody(text));
    const diff = user.compose([tx]);
    const executor = user.executorOf(diff.nonce);
    if (fault)
      await devnet.devshardHosts.setFault(executor, { mode: fault, ...(remaining ? { remaining } : {}) });
    return { id: diff.nonce, payload, executor };
  }

  it('refused: accepts once the deadline passed and the challenged executor still refuses', async () => {
    const { id, payload, executor } = await startWithFault('nobody answers', 'refuse');
    const sent = await user.chat(executor, { payload });
    expect(receiptOf(sent)!.receipt).toBeUndefined();
    // Before refusal_timeout: every voter rejects.
    for (const v of await askVoters(id, 'refused', payload)) {
      expect(v.body).toMatchObject({ accept: false, reject_cause: 'refusal deadline has not passed' });
    }
    seconds(user.state.config.refusalTimeout + 1n);
    const votes = await askVoters(id, 'refused', payload);
    for (const v of votes) {
      const session = devnet.devshardHosts.session(v.address, user.row.id)!;
      expect(v.body.accept).toBe(true);
      expect(Number(v.body.voter_slot)).toBe(session.primarySlot);
      const content = { escrowId: user.id, inferenceId: id, reason: TimeoutReason.Refused, accept: true };
      expect(recoverTimeoutVoter(content, Buffer.from(v.body.signature, 'base64'))).toBe(v.address);
    }
    const balance = user.state.balance;
    const reserved = user.state.inferences.get(id)!.reservedCost;
    user.compose([timeoutTx(id, TimeoutReason.Refused, votes)]);
    expect(user.state.inferences.get(id)!.status).toBe(InferenceStatus.TimedOut);
    expect(user.state.hostStats[Number(id % 16n)]!.missed).toBe(1);
    // Full refund of the reservation; the diff pays its fee.
    expect(user.state.balance).toBe(balance + reserved - user.state.config.feePerNonce);
    const answer = await user.chat(user.executorOf(user.state.latestNonce));
    expect(receiptOf(answer)!.stateHash).toEqual(user.state.root);
  });

  it('refused: rejects a wrong payload, and rejects when the challenged executor gives a receipt', async () => {
    const { id, payload, executor } = await startWithFault('answered late', 'refuse', 1);
    await user.chat(executor, { payload });
    seconds(user.state.config.refusalTimeout + 1n);
    const wrong = await askVoters(id, 'refused', { ...payload, prompt: chatBody('another prompt') });
    for (const v of wrong)
      expect(v.body.reject_cause).toBe('payload: prompt hash differs from the signed start');
    const noPayload = await askVoters(id, 'refused');
    for (const v of noPayload) expect(v.body.reject_cause).toBe('no payload');
    // The fault is used up: the challenge produces a receipt, the vote is refused and the Confirm
    // comes back as a recovery tx.
    const votes = await askVoters(id, 'refused', payload);
    for (const v of votes) {
      expect(v.body.accept).toBe(false);
      expect(['executor gave a receipt', 'executor receipt known']).toContain(v.body.reject_cause);
      const kinds = (v.body.mempool as string[]).map((b) => decodeTx(Buffer.from(b, 'base64')).tx.kind);
      expect(kinds).toContain('confirmStart');
    }
    for (const b of votes[0]!.body.mempool as string[]) user.queue(decodeTx(Buffer.from(b, 'base64')));
    await user.tick();
    expect(user.state.inferences.get(id)!.status).not.toBe(InferenceStatus.Pending);
  });

  it('execution: accepts when the executor stalled past the deadline with no Finish anywhere', async () => {
    const { id, payload, executor } = await startWithFault('stalls forever', 'stall-after-receipt');
    const chat = await user.openChat(executor, payload, '\n\n');
    expect(receiptOf(chat.answer)!.receipt).toHaveLength(65);
    // The stalled stream stays open; later contacts with the executor are normal again.
    await devnet.devshardHosts.setFault(executor, null);
    user.process(executor, chat.answer, id);
    await user.tick();
    expect(user.state.inferences.get(id)!.status).toBe(InferenceStatus.Started);
    for (const v of await askVoters(id, 'execution')) {
      expect(v.body.reject_cause).toBe('execution deadline has not passed');
    }
    seconds(user.state.config.executionTimeout + 1n);
    const votes = await askVoters(id, 'execution');
    for (const v of votes) {
      expect(v.body.accept).toBe(true);
      const content = { escrowId: user.id, inferenceId: id, reason: TimeoutReason.Execution, accept: true };
      expect(recoverTimeoutVoter(content, Buffer.from(v.body.signature, 'base64'))).toBe(v.address);
    }
    user.compose([timeoutTx(id, TimeoutReason.Execution, votes)]);
    expect(user.state.inferences.get(id)!.status).toBe(InferenceStatus.TimedOut);
    chat.abort();
  });

  it('execution: rejects when the executor holds a Finish the user never included', async () => {
    const { tx, payload } = user.start(chatBody('finished but lost'));
    const diff = user.compose([tx]);
    const executor = user.executorOf(diff.nonce);
    const answer = await user.chat(executor, { payload, process: false });
    const receipt = receiptOf(answer)!;
    // The user keeps the receipt but loses the meta event (and with it the Finish).
    user.queue(
      txOf.confirmStart(
        newMsg.confirmStart({
          inferenceId: diff.nonce,
          executorSig: receipt.receipt!,
          confirmedAt: receipt.confirmedAt!,
        }),
      ),
    );
    user.hostSync.set(executor, receipt.nonce);
    await user.tick();
    expect(user.state.inferences.get(diff.nonce)!.status).toBe(InferenceStatus.Started);
    seconds(user.state.config.executionTimeout + 1n);
    const votes = await askVoters(diff.nonce, 'execution');
    for (const v of votes) {
      expect(v.body.accept).toBe(false);
      expect(['executor has a finish', 'finish known']).toContain(v.body.reject_cause);
      const finish = (v.body.mempool as string[]).map((b) => decodeTx(Buffer.from(b, 'base64')));
      expect(finish.some((t) => t.tx.kind === 'finishInference')).toBe(true);
    }
    for (const b of votes[0]!.body.mempool as string[]) user.queue(decodeTx(Buffer.from(b, 'base64')));
    await user.tick();
    expect(user.state.inferences.get(diff.nonce)!.status).toBe(InferenceStatus.Finished);
  });

  it('lets group members call it, answers 403 to others and 400 to an unknown reason', async () => {
    const id = user.state.latestNonce;
    const member = devnet.participants.find((p) => p.address === user.hostAddresses[0])!;
    const voter = user.hostAddresses[1]!;
    const asMember = await user.post(voter, 'verify-timeout', verifyBody(id, 'execution', voter), {
      key: member.key,
    });
    expect(asMember.status).toBe(200);
    const outsider = await user.post(voter, 'verify-timeout', verifyBody(id, 'execution', voter), {
      key: account(devnet, 'outsider').key,
    });
    expect(outsider.status).toBe(403);
    const bad = new TextEncoder().encode('{"inference_id":1,"reason":"slow"}');
    expect((await user.post(voter, 'verify-timeout', bad)).status).toBe(400);
    // A catch-up diff the host cannot apply (not the creator's signature) is a 500, not a vote.
    const next = user.compose();
    const forged = signTestDiff(member.key, user.id, next);
    const body = new TextEncoder().encode(
      stringifyJsonLossless({
        inference_id: id,
        reason: 'execution',
        diffs: [...user.catchUp(voter, next.nonce - 1n), forged].map((d) =>
          parseJsonLossless(encodeDiffWire(diffToWire(d))),
        ),
      }),
    );
    const refused = await user.post(voter, 'verify-timeout', body);
    expect(refused.status).toBe(500);
    expect(devnet.devshardHosts.session(voter, user.row.id)!.latestNonce).toBe(next.nonce - 1n);
  });
});
