import { sha256 } from '@gonka-gateway/chain';
import {
  decodeTx,
  InferenceStatus,
  recoverFinishProposer,
  recoverStateSigner,
} from '@gonka-gateway/devshard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { countTokens } from '../model/tokenizer.js';
import { startTestDevnet } from '../testing/test-devnet.js';
import { metaOf, receiptOf, TestUser } from '../testing/test-user.js';

// A session over the 16 slots of a devnet escrow, driven through every host.
describe('devshard hosts: one session', () => {
  let devnet: Devnet;
  let user: TestUser;

  beforeAll(async () => {
    devnet = await startTestDevnet();
    user = await TestUser.open(devnet);
  });
  afterAll(() => devnet.close());

  it('runs streamed and non-streamed inferences and every host ends on the user root', async () => {
    expect(user.slots).toHaveLength(16);
    for (let i = 0; i < 6; i++) {
      const stream = i % 2 === 0;
      const { diff, executor, answer } = await user.infer(`question number ${i}`, { stream });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('text/event-stream');
      // Receipt first: the executor's root and signature at the new nonce, and the receipt.
      expect(answer.events[0]?.type).toBe('receipt');
      const receipt = receiptOf(answer)!;
      expect(receipt.nonce).toBe(diff.nonce);
      expect(receipt.stateHash).toEqual(user.state.root);
      expect(recoverStateSigner(receipt.stateHash!, user.id, receipt.nonce, receipt.stateSig!)).toBe(
        executor,
      );
      expect(receipt.receipt).toHaveLength(65);
      expect(devnet.devshardHosts.nowSeconds() - receipt.confirmedAt!).toBeLessThanOrEqual(1n);
      // Then the model output, the meta event with the Finish, and [DONE].
      const lines = answer.modelLines.map((l) => JSON.parse(l));
      if (stream) {
        expect(lines.length).toBeGreaterThan(2);
        expect(lines.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
      } else {
        expect(lines).toHaveLength(1);
        expect(lines[0].object).toBe('chat.completion');
      }
      expect(answer.events.at(-1)?.type).toBe('meta');
      expect(answer.done).toBe(true);
      const finish = metaOf(answer)!
        .mempool.map((b) => decodeTx(b).tx)
        .find((t) => t.kind === 'finishInference');
      expect(finish?.kind).toBe('finishInference');
      if (finish?.kind !== 'finishInference') return;
      const served = answer.modelLines.map((l) => `data: ${l}\n\n`).join('');
      expect(finish.msg.responseHash).toEqual(sha256(new TextEncoder().encode(served)));
      const text = lines
        .map((c) => (stream ? (c.choices[0]?.delta?.content ?? '') : c.choices[0].message.content))
        .join('');
      expect(finish.msg.outputTokens).toBe(BigInt(countTokens(text)));
      expect(finish.msg.inputTokens).toBe(BigInt(countTokens(`user: question number ${i}`)));
      expect(finish.msg.executorSlot).toBe(Number(diff.nonce % 16n));
      expect(finish.msg.escrowId).toBe(user.id);
      expect(recoverFinishProposer(finish.msg)).toBe(executor);
    }
    // One more diff carries the last Confirm/Finish; then every host catches up without a payload.
    await user.tick();
    const ids = [...user.state.inferences.values()];
    expect(ids.map((r) => r.status)).toEqual(ids.map(() => InferenceStatus.Finished));
    for (const address of user.hostAddresses) {
      const answer = await user.chat(address);
      expect(answer.status).toBe(200);
      expect(answer.done).toBe(false);
      expect(answer.modelLines).toEqual([]);
      const receipt = receiptOf(answer)!;
      expect(receipt.nonce).toBe(user.state.latestNonce);
      expect(receipt.stateHash).toEqual(user.state.root);
      expect(receipt.receipt).toBeUndefined();
      expect(devnet.devshardHosts.session(address, user.row.id)!.state.root).toEqual(user.state.root);
    }
  });
});
