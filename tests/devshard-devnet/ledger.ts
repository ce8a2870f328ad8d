// The money of a session recomputed from its stored diffs, independently of the state machine: what
// the finalize document, the session balance and the chain payout must agree with. Rules of
// devshard-protocol.md §5.2 (balance = amount − create fee), §5.4 (reservation, Finish cost clamped to
// it, timeout refund and missed), §5.5 (every diff before the FinalizeRound diff pays fee_per_nonce)
// and §5.6 (at Settlement, Pending/Started records are charged their full reservation).
import type { DevshardEscrow } from '@gonka-gateway/chain';
import type { StoredDiff } from '@gonka-gateway/devshard/session';

export type Fate =
  | 'pending'
  | 'started'
  | 'finished'
  | 'timed_out'
  | 'challenged'
  | 'validated'
  | 'invalidated';

export interface InferenceEntry {
  readonly slot: number;
  readonly reserved: bigint;
  fate: Fate;
  cost: bigint;
  inputTokens?: bigint;
  outputTokens?: bigint;
  /** Slots whose address validated or voted (§5.4), and the weights of each side. */
  validatedBy: Set<number>;
  votesValid: number;
  votesInvalid: number;
}

export interface Ledger {
  /** Nonce of the diff carrying MsgFinalizeRound (F), 0n when not finalized. */
  readonly finalizeNonce: bigint;
  readonly latestNonce: bigint;
  /** Diffs that paid fee_per_nonce: every one before F (all of them while Active). */
  readonly payingNonces: bigint;
  readonly fees: bigint;
  /** Per slot: Σ actual cost of its inferences (drained ones at their reservation). */
  readonly cost: bigint[];
  readonly missed: number[];
  /** Per slot: inferences invalidated by validation votes (§5.4 ValidationVote). */
  readonly invalid: number[];
  readonly balance: bigint;
  /** By inference id; `fate` is the status before the settlement drain. */
  readonly inferences: ReadonlyMap<bigint, InferenceEntry>;
}

export function ledgerOf(row: DevshardEscrow, diffs: readonly StoredDiff[]): Ledger {
  const n = row.slots.length;
  const price = row.tokenPrice;
  const inferences = new Map<bigint, InferenceEntry>();
  const slotsOf = new Map<string, number[]>();
  row.slots.forEach((address, slot) => {
    slotsOf.set(address, [...(slotsOf.get(address) ?? []), slot]);
  });
  const addressSlots = (slot: number) => slotsOf.get(row.slots[slot]!)!;
  const factor = row.voteThresholdFactor === 0 ? 50 : row.voteThresholdFactor;
  const threshold = Math.floor((n * factor) / 100);
  const invalid = row.slots.map(() => 0);
  let finalizeNonce = 0n;
  let expectedNonce = 1n;
  for (const { nonce, diff } of diffs) {
    if (nonce !== expectedNonce || diff.nonce !== nonce) throw new Error(`diff ${nonce} out of order`);
    expectedNonce++;
    for (const { tx } of diff.txs) {
      switch (tx.kind) {
        case 'startInference': {
          const m = tx.msg;
          inferences.set(m.inferenceId, {
            slot: Number(m.inferenceId % BigInt(n)),
            reserved: (m.inputLength + m.maxTokens) * price,
            fate: 'pending',
            cost: 0n,
            validatedBy: new Set(),
            votesValid: 0,
            votesInvalid: 0,
          });
          break;
        }
        case 'confirmStart':
          entry(inferences, tx.msg.inferenceId).fate = 'started';
          break;
        case 'finishInference': {
          const e = entry(inferences, tx.msg.inferenceId);
          const actual = (tx.msg.inputTokens + tx.msg.outputTokens) * price;
          e.fate = 'finished';
          // v5 clamps the charge to the reservation (§5.4); bigint has no Math.min.
          e.cost = e.reserved;
          if (actual < e.reserved) e.cost = actual;
          e.inputTokens = tx.msg.inputTokens;
          e.outputTokens = tx.msg.outputTokens;
          break;
        }
        case 'timeoutInference':
          entry(inferences, tx.msg.inferenceId).fate = 'timed_out';
          break;
        case 'validation': {
          // A second validation by the same address is a no-op; only a Finished record moves.
          const e = entry(inferences, tx.msg.inferenceId);
          const mine = addressSlots(tx.msg.validatorSlot);
          if (mine.some((s) => e.validatedBy.has(s))) break;
          e.validatedBy.add(tx.msg.validatorSlot);
          if (e.fate !== 'finished') break;
          if (tx.msg.valid) e.votesValid += mine.length;
          else {
            e.votesInvalid += mine.length;
            e.fate = 'challenged';
          }
          break;
        }
        case 'validationVote': {
          const e = entry(inferences, tx.msg.inferenceId);
          if (e.fate === 'validated' || e.fate === 'invalidated') break;
          if (e.fate !== 'challenged') throw new Error(`vote on ${e.fate} inference in diff ${nonce}`);
          const mine = addressSlots(tx.msg.voterSlot);
          for (const s of mine) e.validatedBy.add(s);
          if (tx.msg.voteValid) e.votesValid += mine.length;
          else e.votesInvalid += mine.length;
          if (e.votesInvalid > threshold) {
            // Invalidated: the executor's charge goes back to the balance and it counts one invalid.
            e.fate = 'invalidated';
            e.cost = 0n;
            invalid[e.slot]!++;
          } else if (e.votesValid > threshold) e.fate = 'validated';
          break;
        }
        case 'finalizeRound':
          finalizeNonce = nonce;
          break;
        default:
          throw new Error(`unexpected ${tx.kind} in diff ${nonce}`);
      }
    }
  }
  const latestNonce = expectedNonce - 1n;
  const settled = finalizeNonce > 0n && latestNonce >= finalizeNonce + BigInt(n);
  const cost = row.slots.map(() => 0n);
  const missed = row.slots.map(() => 0);
  for (const e of inferences.values()) {
    if (e.fate === 'timed_out') missed[e.slot]!++;
    const charged = settled && (e.fate === 'pending' || e.fate === 'started') ? e.reserved : e.cost;
    cost[e.slot]! += charged;
  }
  const payingNonces = finalizeNonce > 0n ? finalizeNonce - 1n : latestNonce;
  const fees = row.createDevshardFee + row.feePerNonce * payingNonces;
  const spent = cost.reduce((a, b) => a + b, 0n);
  // While Active, Pending/Started inferences still hold their reservation.
  const held = settled
    ? 0n
    : [...inferences.values()]
        .filter((e) => e.fate === 'pending' || e.fate === 'started')
        .reduce((a, e) => a + e.reserved, 0n);
  return {
    finalizeNonce,
    latestNonce,
    payingNonces,
    fees,
    cost,
    missed,
    invalid,
    balance: row.amount - fees - spent - held,
    inferences,
  };
}

function entry(map: Map<bigint, InferenceEntry>, id: bigint): InferenceEntry {
  const e = map.get(id);
  if (!e) throw new Error(`tx for unknown inference ${id}`);
  return e;
}
