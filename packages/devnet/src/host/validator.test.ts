import { InferenceStatus } from '@gonka-gateway/devshard';
import { afterAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { startTestDevnet } from '../testing/test-devnet.js';
import { TestUser } from '../testing/test-user.js';
import { type AppliedLog, ValidationCandidates } from './validator.js';

/** A host's applied log: live ids at the latest nonce, and the ids each diff named. */
function log(live: bigint[], named: bigint[][]): AppliedLog {
  return {
    latestNonce: BigInt(named.length),
    state: { inferences: new Map(live.map((id) => [id, id])) },
    applied: (nonce) => {
      const ids = named[Number(nonce) - 1];
      return ids && { inferenceIds: ids };
    },
  };
}

describe('ValidationCandidates', () => {
  it('seeds from every live record once, then takes only the ids the new diffs name', () => {
    const candidates = new ValidationCandidates();
    expect(candidates.pending(log([5n, 2n, 9n], [[2n], [5n], [9n]]))).toEqual([2n, 5n, 9n]);
    candidates.settle(2n);
    candidates.settle(9n);
    // 5 was not settled (its answer was not published yet): it stays due on every pass.
    expect(candidates.pending(log([5n, 2n, 9n], [[2n], [5n], [9n]]))).toEqual([5n]);
    // Nonce 4 names 2 again (say another host challenged it) and 11 (a new Start), ascending.
    expect(candidates.pending(log([2n, 5n, 9n, 11n], [[2n], [5n], [9n], [11n, 2n]]))).toEqual([2n, 5n, 11n]);
    for (const id of [2n, 5n, 11n]) candidates.settle(id);
    expect(candidates.size).toBe(0);
    // A pass with no new diff examines nothing, however many records are live.
    expect(candidates.pending(log([2n, 5n, 9n, 11n], [[2n], [5n], [9n], [11n, 2n]]))).toEqual([]);
  });

  it('takes the ids of every diff applied since its last pass, not just the latest', () => {
    const candidates = new ValidationCandidates();
    expect(candidates.pending(log([], []))).toEqual([]);
    expect(candidates.pending(log([1n, 2n, 3n], [[1n], [2n], [3n, 1n]]))).toEqual([1n, 2n, 3n]);
  });
});

// With validation_rate at 10 000 bp every host validates every Finished inference it did not
// execute: proposals built from the incremental candidates miss none of them.
describe('devnet validators at validation_rate 10 000', () => {
  let devnet: Devnet | undefined;
  afterAll(() => devnet?.close());

  it('every non-executor host validates every Finished inference', async () => {
    devnet = await startTestDevnet({
      params: (p) => {
        p.devshardEscrow.validationRate = 10_000;
      },
    });
    const user = await TestUser.open(devnet);
    for (let i = 0; i < 10; i++) await user.infer(`question ${i}`);
    // Each host applies the Finishes (catch-up) and answers with its Validations; ticks carry them.
    for (let round = 0; round < 3; round++) {
      for (const address of user.hostAddresses) await user.chat(address);
      await user.tick();
    }
    const primarySlot = new Map<string, number>();
    user.slots.forEach((address, slot) => {
      if (!primarySlot.has(address)) primarySlot.set(address, slot);
    });
    const records = [...user.state.inferences.values()];
    expect(records).toHaveLength(10);
    for (const rec of records) {
      expect(rec.status).toBe(InferenceStatus.Finished);
      const executor = user.slots[rec.executorSlot]!;
      const expected = [...primarySlot]
        .filter(([address]) => address !== executor)
        .reduce((bits, [, slot]) => bits | (1n << BigInt(slot)), 0n);
      expect(rec.validatedBy).toBe(expected);
    }
  });
});
