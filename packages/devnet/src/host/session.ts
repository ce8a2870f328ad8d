// One host's replica of one devshard session (devshard-protocol.md §5): the strictly applied state,
// the diffs it accepted (as delivered, for GET diffs and for the receipt's Start), the root after
// each nonce (GET signatures at any nonce it reached), its mempool and its executions. It lives in
// the devnet core, outside the Fastify app, so a host restart (participant stop()/start()) keeps it.
import type { PrivateKey } from '@gonka-gateway/chain';
import {
  type ApplyContext,
  applyDiff,
  checkNonceLimit,
  DevshardError,
  DevshardErrorCode,
  type DevshardTx,
  type DiffWire,
  diffFromWire,
  InferenceStatus,
  type MsgStartInference,
  type SessionState,
  type WarmKeyBinding,
} from '@gonka-gateway/devshard';
import { signStateRoot } from '@gonka-gateway/devshard/host';
import { HostMempool } from './mempool.js';

export interface AppliedDiff {
  /** The DiffJSON exactly as delivered (its txs blob is canonical: strict decoding refused others). */
  readonly wire: DiffWire;
  /** State root after this diff. */
  readonly root: Uint8Array;
  /** Warm-key bindings this diff made (§5.7), kept with it so a replay would not ask the chain. */
  readonly warmKeysBound: readonly WarmKeyBinding[];
  /** The diff's StartInference, if any: the receipt is rebuilt from this applied message. */
  readonly start?: MsgStartInference;
  /**
   * Inferences the diff's txs name, in tx order (repeats kept): every live record a diff changes is
   * named by one of its txs (§5.4), so this is what validator.ts re-examines after the apply.
   */
  readonly inferenceIds: readonly bigint[];
}

/** The inference a tx names: every tx that creates or changes a live record carries its id (§5.4). */
function inferenceIdOf(tx: DevshardTx): bigint | undefined {
  switch (tx.kind) {
    case 'startInference':
    case 'confirmStart':
    case 'finishInference':
    case 'timeoutInference':
    case 'errorMiss':
    case 'validation':
    case 'validationVote':
      return tx.msg.inferenceId;
    case 'revealSeed':
    case 'finalizeRound':
    case 'forceHeightSyncTurn':
    case 'heartbeat':
    case 'heightAck':
    case 'none':
      return undefined;
  }
}

/** An inference this host executes: running, or done with the bytes it served (replayed on retry). */
export type Execution = { readonly phase: 'running' } | { readonly phase: 'done'; readonly served: string };

export interface DeliveryResult {
  /** Diffs newly applied by this delivery. */
  readonly applied: number;
  /** Why the first diff that failed was not accepted; later diffs were not tried (§4.1: 500). */
  readonly error?: Error;
}

export class HostSession {
  readonly escrowId: bigint;
  /** Canonical decimal id: the string every signature of the session covers (§1). */
  readonly id: string;
  /** Runtime version that bound the session (§1): any other gets 409. */
  readonly version: string;
  /** This host's slots in the group, ascending; never empty (hosts outside the group bind nothing). */
  readonly slots: readonly number[];
  readonly mempool = new HostMempool();
  readonly executions = new Map<bigint, Execution>();
  #state: SessionState;
  readonly #initialRoot: Uint8Array;
  readonly #log: AppliedDiff[] = [];
  /** nonce → state signature by `signer` (signing is cheaper to cache than to redo on every GET). */
  readonly #stateSigs = new Map<bigint, { signer: string; sig: Uint8Array }>();

  constructor(state: SessionState, version: string, slots: readonly number[]) {
    if (slots.length === 0) throw new Error('a host session needs at least one slot');
    this.escrowId = BigInt(state.escrowId);
    this.id = state.escrowId;
    this.version = version;
    this.slots = slots;
    this.#state = state;
    this.#initialRoot = state.root;
  }

  get state(): SessionState {
    return this.#state;
  }

  get latestNonce(): bigint {
    return this.#state.latestNonce;
  }

  /** The lowest slot: the voter slot of this host's timeout votes (as the reference's PrimarySlot). */
  get primarySlot(): number {
    return this.slots[0]!;
  }

  /** Root at `nonce` if this host reached it (0 = the initial state). */
  rootAt(nonce: bigint): Uint8Array | undefined {
    if (nonce === 0n) return this.#initialRoot;
    return this.#log[Number(nonce) - 1]?.root;
  }

  applied(nonce: bigint): AppliedDiff | undefined {
    return nonce >= 1n ? this.#log[Number(nonce) - 1] : undefined;
  }

  /** Applied diffs with from ≤ nonce ≤ to (clamped to what the host holds). */
  diffs(from: bigint, to: bigint): AppliedDiff[] {
    const first = from < 1n ? 1n : from;
    const last = to > this.latestNonce ? this.latestNonce : to;
    return first > last ? [] : this.#log.slice(Number(first) - 1, Number(last));
  }

  /** Is this host the executor of inference `id` (slot id mod N, §1)? */
  isExecutorOf(id: bigint): boolean {
    const group = this.#state.group;
    return this.slots.includes(Number(id % BigInt(group.slots.length)));
  }

  /**
   * Applies each delivered diff with nonce > latest, in order, strictly (§5.3); diffs at or below the
   * latest nonce were accepted before and are skipped (catch-up resends them). A gap, an undecodable
   * or non-canonical diff, the nonce limit (§7.5) or any apply error stops the delivery: that diff is
   * not accepted, and the ones before it stay applied, as on the reference host.
   */
  deliver(diffs: readonly DiffWire[], ctx: ApplyContext, maxNonce: bigint): DeliveryResult {
    let applied = 0;
    for (const wire of diffs) {
      const latest = this.#state.latestNonce;
      if (wire.nonce <= latest) continue;
      if (wire.nonce !== latest + 1n) {
        return {
          applied,
          error: new DevshardError(
            DevshardErrorCode.InvalidNonce,
            `host at ${latest}, got diff ${wire.nonce}`,
          ),
        };
      }
      try {
        const diff = diffFromWire(wire, { strict: true });
        const txs = diff.txs.map((t) => t.tx);
        checkNonceLimit(this.#state, diff.nonce, txs, maxNonce);
        const { state, effects } = applyDiff(this.#state, diff, ctx);
        const start = txs.find((t) => t.kind === 'startInference');
        this.#state = state;
        this.#log.push({
          wire,
          root: effects.root,
          warmKeysBound: effects.warmKeysBound,
          inferenceIds: txs.flatMap((t) => inferenceIdOf(t) ?? []),
          ...(start?.kind === 'startInference' ? { start: start.msg } : {}),
        });
        applied++;
      } catch (error) {
        return { applied, error: error instanceof Error ? error : new Error(String(error)) };
      }
    }
    if (applied > 0) this.#afterApply();
    return { applied };
  }

  /** Drops mempool entries and cached responses the new state no longer needs. */
  #afterApply(): void {
    this.mempool.prune(this.#state);
    for (const [id, execution] of this.executions) {
      if (execution.phase !== 'done') continue;
      const rec = this.#state.inferences.get(id);
      const pendingOrStarted =
        rec !== undefined &&
        (rec.status === InferenceStatus.Pending || rec.status === InferenceStatus.Started);
      if (!pendingOrStarted) this.executions.delete(id);
    }
  }

  /**
   * StateSignatureContent{root at nonce, id, nonce} signed by `key` (§2.4, §8.2), or undefined when
   * the host never reached `nonce`. `wrongRoot` is the `wrong-state-sig` fault: it signs another root.
   */
  stateSignature(nonce: bigint, key: PrivateKey, wrongRoot = false): Uint8Array | undefined {
    const root = this.rootAt(nonce);
    if (root === undefined) return undefined;
    if (wrongRoot) {
      const bent = Uint8Array.from(root);
      bent[31] = bent[31]! ^ 0xff;
      return signStateRoot(key, bent, this.id, nonce);
    }
    const cached = this.#stateSigs.get(nonce);
    if (cached?.signer === key.address) return cached.sig;
    const sig = signStateRoot(key, root, this.id, nonce);
    this.#stateSigs.set(nonce, { signer: key.address, sig });
    return sig;
  }
}
