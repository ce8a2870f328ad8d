// A host's pending proposals for one session (devshard-protocol.md §4.4 meta event, §7.2 step 5):
// the ConfirmStart of every receipt it signed (so a lost response does not lose the receipt, as the
// reference host does) and the Finish of every inference it executed. Each tx keeps the bytes it
// was built with. An entry leaves once the session state no longer needs it: the user included it,
// or the inference moved on (timed out, sealed), so the meta event never offers a tx that would fail.
import { dedupKey, type EncodedTx, InferenceStatus, type SessionState } from '@gonka-gateway/devshard';

function inferenceIdOf(tx: EncodedTx): bigint | undefined {
  const t = tx.tx;
  return t.kind === 'confirmStart' || t.kind === 'finishInference' ? t.msg.inferenceId : undefined;
}

/** Validation and ValidationVote (validator.ts): their inference, or undefined for other kinds. */
function validatedIdOf(tx: EncodedTx): bigint | undefined {
  const t = tx.tx;
  return t.kind === 'validation' || t.kind === 'validationVote' ? t.msg.inferenceId : undefined;
}

/** §5.4: a Validation applies to Finished (or later) records, a vote only to Challenged ones. */
function validationApplies(tx: EncodedTx, status: number): boolean {
  if (tx.tx.kind === 'validationVote') return status === InferenceStatus.Challenged;
  return status === InferenceStatus.Finished || status === InferenceStatus.Challenged;
}

export class HostMempool {
  /** Dedup key (`confirm:{id}`, `finish:{id}`, `validation:…`, `vote:…`) → tx, in proposal order. */
  readonly #entries = new Map<string, EncodedTx>();

  /** Adds or replaces (a newer receipt for the same inference replaces the older Confirm). */
  add(tx: EncodedTx): void {
    const key = dedupKey(tx.tx);
    if (key === undefined) throw new Error(`not a host proposal: ${tx.tx.kind}`);
    this.#entries.delete(key);
    this.#entries.set(key, tx);
  }

  get size(): number {
    return this.#entries.size;
  }

  txs(): EncodedTx[] {
    return [...this.#entries.values()];
  }

  /** ConfirmStart and FinishInference of one inference: what recovery paths copy (§7.4). */
  forInference(id: bigint): EncodedTx[] {
    return this.txs().filter((tx) => inferenceIdOf(tx) === id);
  }

  has(kind: 'confirmStart' | 'finishInference', id: bigint): boolean {
    return this.#entries.has(`${kind === 'confirmStart' ? 'confirm' : 'finish'}:${id}`);
  }

  /** Drops what can no longer apply: a Confirm needs a Pending record, a Finish Pending or Started. */
  prune(state: SessionState): void {
    for (const [key, tx] of this.#entries) {
      const validated = validatedIdOf(tx);
      if (validated !== undefined) {
        // A Validation stays while the record is open to it; applied ones set the slot bit.
        const rec = state.inferences.get(validated);
        const t = tx.tx;
        const slot =
          t.kind === 'validation' ? t.msg.validatorSlot : t.kind === 'validationVote' ? t.msg.voterSlot : 0;
        const applied = rec !== undefined && ((rec.validatedBy >> BigInt(slot)) & 1n) === 1n;
        if (!rec || applied || !validationApplies(tx, rec.status)) this.#entries.delete(key);
        continue;
      }
      const id = inferenceIdOf(tx);
      const rec = id === undefined ? undefined : state.inferences.get(id);
      const keep =
        rec !== undefined &&
        (tx.tx.kind === 'confirmStart'
          ? rec.status === InferenceStatus.Pending
          : rec.status === InferenceStatus.Pending || rec.status === InferenceStatus.Started);
      if (!keep) this.#entries.delete(key);
    }
  }
}
