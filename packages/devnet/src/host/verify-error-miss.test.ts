import {
  diffToWire,
  encodeBase64,
  encodeDiffWire,
  InferenceStatus,
  newMsg,
  parseJsonLossless,
  recoverErrorMissVoter,
  stringifyJsonLossless,
  txOf,
} from '@gonka-gateway/devshard';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { type JsonBody, startTestDevnet } from '../testing/test-devnet.js';
import { TestUser } from '../testing/test-user.js';

// The error-miss path (§4.3 VerifyErrorMissRequest, §5.4 ErrorMiss): an executor with the `error-body`
// fault serves an OpenAI error yet bills its tokens; the other hosts vote for the miss once shown the
// Finish and the body, and MsgErrorMiss refunds the cost and counts a miss. Honest answers get no vote.
describe('devshard hosts: verify-error-miss', () => {
  let devnet: Devnet;
  let user: TestUser;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    user = await TestUser.open(devnet);
  });
  afterEach(() => devnet.devshardHosts.clearFaults());
  afterAll(() => devnet.close());

  /** Serves one inference to its Finished state (Confirm + Finish applied by a second diff). */
  async function served(text: string, fault: boolean) {
    const id = user.state.latestNonce + 1n;
    const executor = user.executorOf(id);
    if (fault) await devnet.devshardHosts.setFault(executor, { mode: 'error-body', remaining: 1 });
    const { answer } = await user.infer(text);
    const finish = user.pending.find((t) => t.tx.kind === 'finishInference')!;
    await user.tick();
    expect(user.state.inferences.get(id)?.status).toBe(InferenceStatus.Finished);
    const body = answer.modelLines.map((l) => `data: ${l}\n\n`).join('');
    return { id, executor, finish, body: new TextEncoder().encode(body) };
  }

  async function ask(id: bigint, executor: string, finishBytes: Uint8Array, body: Uint8Array) {
    const voters = user.hostAddresses.filter((a) => a !== executor);
    return Promise.all(
      voters.map(async (address) => {
        const diffs = user.catchUp(address).map((d) => parseJsonLossless(encodeDiffWire(diffToWire(d))));
        const res = await user.post(
          address,
          'verify-error-miss',
          new TextEncoder().encode(
            stringifyJsonLossless({
              inference_id: id,
              diffs,
              finish_tx: encodeBase64(finishBytes),
              response_payload: encodeBase64(body),
            }),
          ),
        );
        expect(res.status).toBe(200);
        user.hostSync.set(address, user.state.latestNonce);
        return { address, body: parseJsonLossless(await res.text()) as JsonBody };
      }),
    );
  }

  it('accepts an error body billed as an answer; MsgErrorMiss refunds it and counts a miss', async () => {
    const { id, executor, finish, body } = await served('the backend fails', true);
    expect(new TextDecoder().decode(body)).toContain('"error"');
    const record = user.state.inferences.get(id)!;
    expect(record.actualCost).toBeGreaterThan(0n);
    const votes = await ask(id, executor, finish.bytes, body);
    for (const v of votes) {
      expect(v.body.accept).toBe(true);
      const content = { escrowId: user.id, inferenceId: id, accept: true, responseHash: record.responseHash };
      expect(recoverErrorMissVoter(content, Buffer.from(v.body.signature, 'base64'))).toBe(v.address);
    }
    const balance = user.state.balance;
    const slot = Number(id % 16n);
    const costBefore = user.state.hostStats[slot]!.cost;
    user.compose([
      txOf.errorMiss(
        newMsg.errorMiss({
          inferenceId: id,
          votes: votes.map((v) =>
            newMsg.vote({
              voterSlot: Number(v.body.voter_slot),
              accept: true,
              signature: Buffer.from(v.body.signature as string, 'base64'),
            }),
          ),
        }),
      ),
    ]);
    expect(user.state.inferences.get(id)!.status).toBe(InferenceStatus.TimedOut);
    expect(user.state.hostStats[slot]!.missed).toBe(1);
    expect(user.state.hostStats[slot]!.cost).toBe(costBefore - record.actualCost);
    expect(user.state.balance).toBe(balance + record.actualCost - user.state.config.feePerNonce);
    // The hosts take that diff: the executor's replica agrees.
    const answer = await user.tick();
    expect(answer.status).toBe(200);
  });

  it('rejects an honest answer, a body that does not hash to the Finish, and a foreign Finish', async () => {
    const { id, executor, finish, body } = await served('a fine answer', false);
    for (const v of await ask(id, executor, finish.bytes, body)) {
      expect(v.body).toMatchObject({ accept: false, reject_cause: 'response_payload is not an error body' });
    }
    const fake = new TextEncoder().encode('data: {"error":{"message":"made up"}}\n\n');
    for (const v of await ask(id, executor, finish.bytes, fake)) {
      expect(v.body.reject_cause).toBe('response_payload does not hash to response_hash');
    }
    for (const v of await ask(id + 1n, executor, finish.bytes, body)) expect(v.body.accept).toBe(false);
  });
});
