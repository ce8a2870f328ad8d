// Test support: devshard hosts in process, behind the HostTransport interface. Each
// host is a strict replica (applyDiff, the same state machine as the devnet hosts), signs with a real
// key: state signatures on every answer, executor receipts, Finish proposer signatures, timeout votes
// by the rules of devshard-protocol.md §7.4. Faults are switches per host. Nothing of the session
// under test is mocked; only HTTP is absent.
import { type PrivateKey, sha256 } from '@gonka-gateway/chain';
import { SessionPhase } from '../hash/root-formula.js';
import type { DiffWire, InferenceRequestWire, PayloadWire, ReceiptEvent } from '../json/wire.js';
import { diffFromWire, diffToWire } from '../json/wire.js';
import { promptHash } from '../prompt/prompt-hash.js';
import { type DecodedTx, decodeTx, type EncodedTx } from '../proto/devshard-tx.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { TimeoutReason } from '../proto/tx-messages.js';
import type { Clock } from '../session/session-clock.js';
import type { SessionRecord } from '../session/store.js';
import type { SignedDiff } from '../signing/diff.js';
import { signExecutorReceipt } from '../signing/executor-receipt.js';
import { memoizeRecover, type RecoverFn } from '../signing/primitive.js';
import { signFinish } from '../signing/proposer.js';
import { signStateRoot } from '../signing/state-signature.js';
import { signTimeoutVote } from '../signing/votes.js';
import { applyDiff } from '../state/apply-diff.js';
import { dedupKey } from '../state/candidates.js';
import { checkNonceLimit } from '../state/diff-checks.js';
import { sessionFromEscrow } from '../state/init.js';
import { type InferenceRecord, InferenceStatus, type SessionState } from '../state/types.js';
import { HostErrorCode, HostTransportError } from '../transport/errors.js';
import type {
  ChatEvent,
  ChatOptions,
  ChatStream,
  DiffRecord,
  HostTarget,
  HostTransport,
  VerifyTimeoutRequest,
  VerifyTimeoutResponse,
} from '../transport/types.js';

export interface HostBehaviour {
  /** Every call fails like an unreachable host. */
  down?: boolean;
  /** As executor: applies the diffs but never signs a receipt (and answers a challenge with none). */
  refuse?: boolean;
  /** As executor: signs the receipt, then the stream breaks before the Finish. */
  stall?: boolean;
  /** Answers with a state_hash that is not its root. */
  wrongStateHash?: boolean;
  /** Never signs its state. */
  withholdSignature?: boolean;
  /** Signs its timeout votes with this key instead of its own (a forged vote). */
  voteKey?: PrivateKey;
  /** Extra txs this host puts into its meta mempool (injection attempts). */
  extraMempool?: () => EncodedTx[];
  /** Refuses every new diff with 500 apply_failed (config drift, or a diff no host can apply). */
  rejectDiffs?: boolean;
  /** Holds each stream event of these kinds until the promise returned resolves (a slow path). */
  hold?: (event: ChatEvent['type'], nonce: bigint) => Promise<void> | undefined;
  /** As executor: the stream stays open after the chunks, never sending meta or [DONE] (until cancelled). */
  hangBeforeMeta?: boolean;
  /** As executor: its Finish claims a response_hash of other bytes than it served. */
  tamperFinish?: boolean;
  /** As executor: stamps receipts (and so the Confirm) with this observed height (v5, §9). */
  stampHeight?: bigint;
}

export interface ChatCall {
  readonly host: string;
  readonly nonce: bigint;
  readonly diffNonces: readonly bigint[];
  readonly payload: boolean;
  readonly purpose: string | undefined;
}

const enc = new TextEncoder();

export class InProcessHost {
  state: SessionState;
  readonly diffs: SignedDiff[] = [];
  readonly roots = new Map<bigint, Uint8Array>();
  mempool: EncodedTx[] = [];
  behaviour: HostBehaviour = {};
  readonly slots: readonly number[];

  constructor(
    readonly key: PrivateKey,
    initial: SessionState,
  ) {
    this.state = initial;
    this.roots.set(0n, initial.root);
    this.slots = initial.group.slotsOf.get(key.address) ?? [];
  }

  get address(): string {
    return this.key.address;
  }

  hasTx(kind: 'confirmStart' | 'finishInference', id: bigint): boolean {
    return this.mempool.some((t) => t.tx.kind === kind && t.tx.msg.inferenceId === id);
  }
}

function payloadMatches(rec: InferenceRecord, p: PayloadWire): boolean {
  return (
    Buffer.compare(promptHash(p.prompt), rec.promptHash) === 0 &&
    p.model === rec.model &&
    p.inputLength === rec.inputLength &&
    p.maxTokens === rec.maxTokens &&
    p.startedAt === rec.startedAt
  );
}

/**
 * A ChatStream over prepared events, ending like the HTTP transport (§4.4); `hold` delays events,
 * `hang` keeps it open after the last one, and cancel() ends it like an aborted body read.
 */
function streamOf(
  events: readonly ChatEvent[],
  payloadSent: boolean,
  options: { hold?: (type: ChatEvent['type']) => Promise<void> | undefined; hang?: boolean } = {},
): ChatStream {
  let cancelled = false;
  let wake: (() => void) | undefined;
  const cancelledError = () => new HostTransportError(HostErrorCode.Aborted, 'in-process stream cancelled');
  const wait = async (p: Promise<void>) => {
    await Promise.race([p, new Promise<void>((resolve) => (wake = resolve))]);
    if (cancelled) throw cancelledError();
  };
  return {
    cancel() {
      cancelled = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (const e of events) {
        await Promise.resolve();
        const held = options.hold?.(e.type);
        if (held) await wait(held);
        if (cancelled) throw cancelledError();
        yield e;
      }
      if (options.hang) await wait(new Promise<void>(() => undefined));
      // Same ending rules as the HTTP transport (§4.4).
      const done = events.some((e) => e.type === 'done');
      if (payloadSent && !done) {
        throw new HostTransportError(HostErrorCode.TruncatedExecution, 'in-process stream cut');
      }
    },
  };
}

/** The model frames an executor serves for `nonce` (each sent as `line\n\n`). */
function servedLines(nonce: bigint): readonly string[] {
  return [
    `data: {"choices":[{"delta":{"content":"n${nonce}"}}]}`,
    'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}',
  ];
}

export class InProcessNetwork implements HostTransport {
  readonly hosts = new Map<string, InProcessHost>();
  readonly calls: ChatCall[] = [];
  readonly verifyCalls: { host: string; id: bigint; diffs: number }[] = [];
  /** nonce → hex user signature of every diff any host received (to prove no nonce is signed twice). */
  readonly signedByNonce = new Map<bigint, string>();
  readonly conflicts: bigint[] = [];
  /** Every diff any host was sent (chat, catch-up, verify-timeout, challenge), applied or skipped. */
  readonly received: SignedDiff[] = [];
  /** Hook run at the start of every chat call (write-ahead assertions). */
  onChat?: (host: string, request: InferenceRequestWire) => void | Promise<void>;
  readonly #clock: Clock;
  readonly #recover: RecoverFn = memoizeRecover();
  readonly #escrowId: string;
  readonly #maxNonce: bigint;
  readonly #keep: number | undefined;
  /** shareApplied: nonce → the root it was applied on, its user signature and the state after it. */
  readonly #applied:
    | Map<bigint, { readonly before: Uint8Array; readonly sig: string; readonly after: SessionState }>
    | undefined;
  /** Host-side busy time, so benchmarks can subtract it. */
  hostMs = 0;

  constructor(options: {
    record: SessionRecord;
    hostKeys: readonly PrivateKey[];
    clock: Clock;
    maxNonce?: bigint;
    /**
     * Keep only about this many of the latest diffs, roots, calls and user signatures (a benchmark
     * driving a session to max_nonce must not measure the hosts' history); default: everything.
     */
    keepHistory?: number;
    /**
     * Hosts at the same root apply a diff once and share the resulting state (an immutable value):
     * the same answers for a fifth of the hosts' CPU, so a benchmark reaches max_nonce sooner.
     */
    shareApplied?: boolean;
  }) {
    this.#clock = options.clock;
    this.#maxNonce = options.maxNonce ?? 1_000_000n;
    this.#keep = options.keepHistory;
    this.#applied = options.shareApplied ? new Map() : undefined;
    const { state } = sessionFromEscrow(options.record.escrow, {
      tag: options.record.tag,
      chainParams: options.record.chainParams,
    });
    this.#escrowId = state.escrowId;
    for (const key of options.hostKeys) this.hosts.set(key.address, new InProcessHost(key, state));
  }

  readonly resolveHost = (address: string): HostTarget | undefined =>
    this.hosts.has(address) ? { address, baseUrl: `inproc://${address}` } : undefined;

  host(address: string): InProcessHost {
    const h = this.hosts.get(address);
    if (!h) throw new Error(`no host ${address}`);
    return h;
  }

  /** The host serving slot `slot`. */
  hostOfSlot(slot: number): InProcessHost {
    const first = this.hosts.values().next().value as InProcessHost;
    return this.host(first.state.group.slots[slot]!);
  }

  #reachable(address: string): InProcessHost {
    const h = this.host(address);
    if (h.behaviour.down) throw new HostTransportError(HostErrorCode.Network, `host ${address} is down`);
    return h;
  }

  #gossip(tx: EncodedTx): void {
    const key = dedupKey(tx.tx);
    for (const h of this.hosts.values()) {
      if (!h.mempool.some((t) => dedupKey(t.tx) === key)) h.mempool.push(tx);
    }
  }

  #apply(host: InProcessHost, wires: readonly DiffWire[]): void {
    for (const w of wires) {
      const diff = diffFromWire(w, { strict: true });
      this.received.push(diff);
      const sig = Buffer.from(diff.userSig).toString('hex');
      const seen = this.signedByNonce.get(diff.nonce);
      if (seen !== undefined && seen !== sig) this.conflicts.push(diff.nonce);
      this.signedByNonce.set(diff.nonce, sig);
      if (diff.nonce <= host.state.latestNonce) continue; // already applied: hosts skip, not reject
      try {
        if (host.behaviour.rejectDiffs) throw new Error('rejected by this host');
        checkNonceLimit(
          host.state,
          diff.nonce,
          diff.txs.map((t) => t.tx),
          this.#maxNonce,
        );
        host.state = this.#applyOnce(host.state, diff, sig);
      } catch (error) {
        throw new HostTransportError(
          HostErrorCode.ApplyFailed,
          `apply ${diff.nonce}: ${(error as Error).message}`,
          {
            status: 500,
          },
        );
      }
      host.diffs.push(diff);
      host.roots.set(diff.nonce, host.state.root);
      this.#forget(host, diff.nonce);
      const applied = new Set(
        diff.txs.map((t) => dedupKey(t.tx)).filter((k): k is string => k !== undefined),
      );
      host.mempool = host.mempool.filter((t) => !applied.has(dedupKey(t.tx) ?? ''));
    }
  }

  /** applyDiff, or with shareApplied the state another host reached from the same root. */
  #applyOnce(state: SessionState, diff: SignedDiff, sig: string): SessionState {
    const shared = this.#applied?.get(diff.nonce);
    if (shared && shared.sig === sig && Buffer.compare(shared.before, state.root) === 0) return shared.after;
    const after = applyDiff(state, diff, { recover: this.#recover }).state;
    this.#applied?.set(diff.nonce, { before: state.root, sig, after });
    this.#applied?.delete(diff.nonce - 256n);
    return after;
  }

  /** With keepHistory: drops what lies that far behind `nonce` (amortized: trims at twice the bound). */
  #forget(host: InProcessHost, nonce: bigint): void {
    const keep = this.#keep;
    if (keep === undefined) return;
    const old = nonce - BigInt(keep);
    host.roots.delete(old);
    this.signedByNonce.delete(old);
    for (const list of [host.diffs, this.received, this.calls, this.verifyCalls] as unknown[][])
      if (list.length > 2 * keep) list.splice(0, list.length - keep);
  }

  #receipt(host: InProcessHost, extra: Partial<ReceiptEvent> = {}): ReceiptEvent {
    const nonce = host.state.latestNonce;
    const root = host.state.root;
    return {
      nonce,
      stateHash: host.behaviour.wrongStateHash ? sha256(root) : root,
      ...(host.behaviour.withholdSignature
        ? {}
        : { stateSig: signStateRoot(host.key, root, this.#escrowId, nonce) }),
      ...extra,
    };
  }

  /** Executor side of a payload send or a refused-timeout challenge: a signed receipt, or none. */
  #execute(
    host: InProcessHost,
    nonce: bigint,
    payload: PayloadWire,
  ):
    | { receipt: Uint8Array; confirmedAt: bigint; observedHeight?: bigint; observedBlockHash?: Uint8Array }
    | undefined {
    const rec = host.state.inferences.get(nonce);
    const slot = Number(nonce % BigInt(host.state.group.slots.length));
    if (!rec || rec.status !== InferenceStatus.Pending || !host.slots.includes(slot)) return undefined;
    if (host.behaviour.refuse || !payloadMatches(rec, payload)) return undefined;
    const confirmedAt = this.#clock.nowSeconds();
    const height = host.behaviour.stampHeight;
    const stamp =
      height === undefined ? {} : { observedHeight: height, observedBlockHash: new Uint8Array(32).fill(7) };
    const receipt = signExecutorReceipt(host.key, {
      ...stamp,
      inferenceId: nonce,
      promptHash: rec.promptHash,
      model: rec.model,
      inputLength: rec.inputLength,
      maxTokens: rec.maxTokens,
      startedAt: rec.startedAt,
      escrowId: this.#escrowId,
      confirmedAt,
    });
    this.#gossip(
      txOf.confirmStart(
        newMsg.confirmStart({ inferenceId: nonce, executorSig: receipt, confirmedAt, ...stamp }),
      ),
    );
    return { receipt, confirmedAt, ...stamp };
  }

  async chat(
    target: HostTarget,
    _escrowId: string,
    request: InferenceRequestWire,
    options: ChatOptions = {},
  ): Promise<ChatStream> {
    await this.onChat?.(target.address, request);
    const t0 = performance.now();
    const host = this.#reachable(target.address);
    this.calls.push({
      host: target.address,
      nonce: request.nonce,
      diffNonces: request.diffs.map((d) => d.nonce),
      payload: request.payload !== undefined,
      purpose: options.purpose,
    });
    this.#apply(host, request.diffs);
    const events: ChatEvent[] = [];
    const payload = request.payload;
    const executed = payload ? this.#execute(host, request.nonce, payload) : undefined;
    events.push({
      type: 'receipt',
      receipt: this.#receipt(
        host,
        executed
          ? {
              receipt: executed.receipt,
              confirmedAt: executed.confirmedAt,
              ...(executed.observedHeight === undefined
                ? {}
                : {
                    observedHeight: executed.observedHeight,
                    observedBlockHash: executed.observedBlockHash!,
                  }),
            }
          : {},
      ),
    });
    if (payload && executed) {
      const lines = servedLines(request.nonce);
      events.push({ type: 'chunk', line: enc.encode(lines[0]!) });
      if (!host.behaviour.stall && !host.behaviour.hangBeforeMeta) {
        this.#gossip(this.#finish(host, request.nonce, payload));
        events.push({ type: 'chunk', line: enc.encode(lines[1]!) });
        const mempool = [...(host.behaviour.extraMempool?.() ?? []), ...host.mempool];
        events.push({ type: 'meta', meta: { mempool: mempool.map((t) => t.bytes) } });
        events.push({ type: 'done', line: enc.encode('data: [DONE]') });
      }
    }
    if (payload && executed && host.behaviour.hangBeforeMeta) {
      // The Finish exists (gossiped to the mempools), but this stream never gets to its meta event.
      this.#gossip(this.#finish(host, request.nonce, payload));
    }
    this.hostMs += performance.now() - t0;
    const hold = host.behaviour.hold;
    return streamOf(events, payload !== undefined, {
      ...(hold ? { hold: (type: ChatEvent['type']) => hold(type, request.nonce) } : {}),
      ...(payload && executed && host.behaviour.hangBeforeMeta ? { hang: true } : {}),
    });
  }

  /**
   * The executor's signed Finish: 20 output tokens, response_hash over the frames it serves
   * (session/served-bytes.ts); `tamperFinish` claims other bytes.
   */
  #finish(host: InProcessHost, nonce: bigint, payload: PayloadWire): EncodedTx {
    const served = servedLines(nonce)
      .map((l) => `${l}\n\n`)
      .join('');
    const output = enc.encode(host.behaviour.tamperFinish ? `${served}!` : served);
    return txOf.finishInference(
      signFinish(
        host.key,
        newMsg.finishInference({
          inferenceId: nonce,
          responseHash: sha256(output),
          inputTokens: payload.inputLength,
          outputTokens: 20n,
          executorSlot: Number(nonce % BigInt(host.state.group.slots.length)),
          escrowId: this.#escrowId,
        }),
      ),
    );
  }

  async verifyTimeout(
    target: HostTarget,
    _escrowId: string,
    req: VerifyTimeoutRequest,
  ): Promise<VerifyTimeoutResponse> {
    const host = this.#reachable(target.address);
    this.verifyCalls.push({ host: target.address, id: req.inferenceId, diffs: req.diffs?.length ?? 0 });
    this.#apply(host, req.diffs ?? []);
    const rec = host.state.inferences.get(req.inferenceId);
    const now = this.#clock.nowSeconds();
    const { config, group } = host.state;
    let accept = false;
    if (rec) {
      const executor = this.host(group.slots[rec.executorSlot]!);
      if (req.reason === 'refused') {
        accept =
          rec.status === InferenceStatus.Pending &&
          now - rec.startedAt >= config.refusalTimeout &&
          !host.hasTx('confirmStart', rec.id) &&
          !host.hasTx('finishInference', rec.id) &&
          req.payload !== undefined &&
          payloadMatches(rec, req.payload) &&
          // Challenge the executor: unreachable or no receipt supports the timeout.
          (executor.behaviour.down || this.#challenge(executor, req) === undefined);
      } else {
        accept =
          rec.status === InferenceStatus.Started &&
          now - rec.confirmedAt >= config.executionTimeout &&
          !host.hasTx('finishInference', rec.id) &&
          (executor.behaviour.down || !executor.hasTx('finishInference', rec.id));
      }
    }
    const reason = req.reason === 'refused' ? TimeoutReason.Refused : TimeoutReason.Execution;
    return {
      accept,
      signature: signTimeoutVote(host.behaviour.voteKey ?? host.key, {
        escrowId: this.#escrowId,
        inferenceId: req.inferenceId,
        reason,
        accept,
      }),
      voterSlot: host.slots[0]!,
    };
  }

  #challenge(executor: InProcessHost, req: VerifyTimeoutRequest) {
    try {
      this.#apply(executor, req.diffs ?? []);
    } catch {
      return undefined;
    }
    return this.#execute(executor, req.inferenceId, req.payload!);
  }

  async getSignatures(
    target: HostTarget,
    _escrowId: string,
    nonce: bigint,
  ): Promise<Map<number, Uint8Array>> {
    const host = this.#reachable(target.address);
    const root = host.roots.get(nonce);
    const out = new Map<number, Uint8Array>();
    if (!root || host.behaviour.withholdSignature) return out;
    // Only a settled state's signature is useful; hosts here sign any nonce they hold.
    const sig = signStateRoot(host.key, root, this.#escrowId, nonce);
    for (const slot of host.slots) out.set(slot, sig);
    return out;
  }

  async getDiffs(target: HostTarget, _escrowId: string, from: bigint, to: bigint): Promise<DiffRecord[]> {
    const host = this.#reachable(target.address);
    return host.diffs
      .filter((d) => d.nonce >= from && d.nonce <= to)
      .map((d) => ({ diff: diffToWire(d), stateHash: host.roots.get(d.nonce)! }));
  }

  async getMempool(target: HostTarget): Promise<DecodedTx[]> {
    const host = this.#reachable(target.address);
    return host.mempool.map((t) => decodeTx(t.bytes));
  }

  /** True when every host's state equals `state` (same nonce, same root). */
  allAt(state: SessionState): boolean {
    return [...this.hosts.values()].every(
      (h) => h.state.latestNonce === state.latestNonce && Buffer.compare(h.state.root, state.root) === 0,
    );
  }

  settled(): boolean {
    return [...this.hosts.values()].every((h) => h.state.phase === SessionPhase.Settlement);
  }
}

export class TestClock implements Clock {
  #ms: number;

  constructor(startSeconds: bigint) {
    this.#ms = Number(startSeconds) * 1000;
  }

  nowMs(): number {
    return this.#ms;
  }

  nowSeconds(): bigint {
    return BigInt(Math.floor(this.#ms / 1000));
  }

  advance(seconds: number): void {
    this.#ms += seconds * 1000;
  }

  /** Backoffs pass instantly: time moves, nobody waits. */
  async sleep(ms: number): Promise<void> {
    this.#ms += ms;
  }
}
