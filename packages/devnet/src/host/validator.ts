// Validation by the devnet hosts (devshard-protocol.md §5.4 Validation and ValidationVote): after a
// host applies diffs, it validates each Finished inference it did not execute with probability
// validation_rate / 10 000 (a deterministic draw per escrow, inference and host, so a run replays),
// and votes on each Challenged inference it has not voted on. A verdict re-runs the mock model on the
// executor's request and compares the answer's text with what the executor served, after checking
// that the served bytes hash to the Finish's response_hash; the executor publishes request and bytes
// here as the reference executor keeps its payloads for validators. The txs wait in the host's
// mempool and reach the gateway with the next meta event, GET mempool or verify-timeout answer.
//
// Faults (faults.ts): `bad-output` on an executor serves altered text (honest validators find
// it invalid and vote it Invalidated); `false-invalid` on a validator makes every verdict of it
// invalid (a false accusation the other hosts vote down); `no-validations` makes a host skip both.
import { sha256 } from '@gonka-gateway/chain';
import {
  type EncodedTx,
  InferenceStatus,
  newMsg,
  signPreimage,
  txOf,
  validationProposerBytes,
  validationVoteProposerBytes,
} from '@gonka-gateway/devshard';
import type { ChatRequest } from '../model/chat-request.js';
import type { MockModel } from '../model/mock-model.js';
import type { AppliedDiff, HostSession } from './session.js';
import type { HostStore } from './session-store.js';

/** What an executor served for one inference: the request it ran and the exact bytes. */
interface Published {
  readonly chat: ChatRequest;
  readonly served: string;
}

/** Bound on published answers per devnet (oldest dropped first): validators only need recent ones. */
const MAX_PUBLISHED = 20_000;

/** Published answers per devnet, keyed by its model instance (one per devnet core). */
const published = new WeakMap<MockModel, Map<string, Published>>();

const keyOf = (escrowId: string, id: bigint) => `${escrowId}:${id}`;

/** Called by the executor once it has served inference `id` (honest or not). */
export function publishExecution(
  model: MockModel,
  escrowId: string,
  id: bigint,
  chat: ChatRequest,
  served: string,
): void {
  let map = published.get(model);
  if (!map) {
    map = new Map();
    published.set(model, map);
  }
  map.set(keyOf(escrowId, id), { chat, served });
  if (map.size > MAX_PUBLISHED) map.delete(map.keys().next().value!);
}

/** The answer text inside served SSE frames: chunk deltas, or a chat.completion's message. */
export function servedText(served: string): string {
  let text = '';
  for (const line of served.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    try {
      type Calls = { function?: { arguments?: string } }[];
      const body = JSON.parse(line.slice(6)) as {
        choices?: {
          delta?: { content?: string | null; tool_calls?: Calls };
          message?: { content?: string | null; tool_calls?: Calls };
        }[];
      };
      // The output is the text, or a tool call's arguments (the mock model's Completion.text).
      for (const c of body.choices ?? []) {
        const out = c.delta ?? c.message;
        text += out?.content ?? '';
        for (const call of out?.tool_calls ?? []) text += call.function?.arguments ?? '';
      }
    } catch {
      text += '\u0000'; // unparseable output never matches a re-run
    }
  }
  return text;
}

/** `bad-output`: the executor serves other text (the frames stay valid JSON). */
export function tamperFrames(frames: readonly string[]): string[] {
  return frames.map((f) =>
    f.replace(/"content":"([^"\\]+)/, (_m, text: string) => `"content":"${text.toUpperCase()}!`),
  );
}

/** Deterministic draw: is this host one of the validators of inference `id` at `rateBps`? */
export function drawsValidation(escrowId: string, id: bigint, address: string, rateBps: number): boolean {
  if (rateBps <= 0) return false;
  if (rateBps >= 10_000) return true;
  const digest = sha256(new TextEncoder().encode(`devnet-validation:${escrowId}:${id}:${address}`));
  const draw = new DataView(digest.buffer, digest.byteOffset, 4).getUint32(0) % 10_000;
  return draw < rateBps;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * The honest verdict on inference `id` with Finish response hash `responseHash`, or undefined when
 * the executor's answer is unknown here (then the host does not validate).
 */
function verdict(
  model: MockModel,
  escrowId: string,
  id: bigint,
  responseHash: Uint8Array,
): boolean | undefined {
  const p = published.get(model)?.get(keyOf(escrowId, id));
  if (!p) return undefined;
  if (!sameBytes(sha256(new TextEncoder().encode(p.served)), responseHash)) return false;
  return servedText(p.served) === model.complete(p.chat).text;
}

export type ValidatorFault = 'false-invalid' | 'no-validations' | undefined;

/**
 * Which live records of one session this host may still owe a Validation or vote: the
 * devnet hosts' cost per apply must not grow with the live records. A record can only become one
 * by a tx that names it (session.ts AppliedDiff.inferenceIds), so after each apply only the ids the
 * new diffs name are added; an id leaves once it is settled for its current status, and comes back
 * when a later tx names it again (e.g. a Finished record another validator challenges).
 */
export class ValidationCandidates {
  /** Inferences this host already validated or voted on (`validation:{id}`, `vote:{id}`). */
  readonly decided = new Set<string>();
  readonly #ids = new Set<bigint>();
  /** Latest nonce whose diff's ids were added; undefined until the first pass seeds from the state. */
  #seenNonce: bigint | undefined;

  /**
   * The ids to examine against `session`'s current state, ascending (the order of the live map,
   * so proposals join the mempool in the order a full scan would add them).
   */
  pending(session: AppliedLog): bigint[] {
    const latest = session.latestNonce;
    if (this.#seenNonce === undefined) {
      for (const id of session.state.inferences.keys()) this.#ids.add(id);
    } else {
      for (let n = this.#seenNonce + 1n; n <= latest; n++) {
        for (const id of session.applied(n)?.inferenceIds ?? []) this.#ids.add(id);
      }
    }
    this.#seenNonce = latest;
    return [...this.#ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Nothing more to do for `id` until a tx names it again. */
  settle(id: bigint): void {
    this.#ids.delete(id);
  }

  get size(): number {
    return this.#ids.size;
  }
}

/** What ValidationCandidates reads of a HostSession. */
export interface AppliedLog {
  readonly latestNonce: bigint;
  readonly state: { readonly inferences: ReadonlyMap<bigint, unknown> };
  applied(nonce: bigint): Pick<AppliedDiff, 'inferenceIds'> | undefined;
}

const candidatesBySession = new WeakMap<HostSession, ValidationCandidates>();

/**
 * Proposes this host's Validation and ValidationVote txs for the current state (idempotent: one per
 * inference and kind). Returns how many it added to the mempool. `candidates` defaults to the
 * session's own (tests pass theirs to look inside).
 */
export function proposeValidations(
  session: HostSession,
  store: HostStore,
  model: MockModel,
  fault: ValidatorFault,
  candidates = candidatesFor(session),
): number {
  // Returns before pending(): the ids the skipped applies name stay due for the next pass.
  if (fault === 'no-validations') return 0;
  const state = session.state;
  const address = store.host.address;
  const mySlots = session.slots;
  const done = candidates.decided;
  let added = 0;
  for (const id of candidates.pending(session)) {
    const rec = state.inferences.get(id);
    const finished = rec?.status === InferenceStatus.Finished;
    const challenged = rec?.status === InferenceStatus.Challenged;
    if (!rec || (!finished && !challenged) || session.isExecutorOf(id)) {
      candidates.settle(id);
      continue;
    }
    const key = `${finished ? 'validation' : 'vote'}:${id}`;
    if (mySlots.some((slot) => hasBit(rec.validatedBy, slot)) || done.has(key)) {
      candidates.settle(id);
      continue;
    }
    if (finished && !drawsValidation(session.id, id, address, state.config.validationRate)) {
      done.add(key);
      candidates.settle(id);
      continue;
    }
    const honest = verdict(model, session.id, id, rec.responseHash);
    if (honest === undefined) continue; // not published (yet): stays a candidate for the next pass
    done.add(key);
    candidates.settle(id);
    const valid = fault === 'false-invalid' ? false : honest;
    session.mempool.add(
      finished ? validationTx(session, store, id, valid) : voteTx(session, store, id, valid),
    );
    added++;
  }
  return added;
}

function candidatesFor(session: HostSession): ValidationCandidates {
  let candidates = candidatesBySession.get(session);
  if (!candidates) {
    candidates = new ValidationCandidates();
    candidatesBySession.set(session, candidates);
  }
  return candidates;
}

/** validated_by is a 128-bit slot bitmap (bit s = slot s, §3.3). */
function hasBit(bitmap: bigint, slot: number): boolean {
  return ((bitmap >> BigInt(slot)) & 1n) === 1n;
}

function validationTx(session: HostSession, store: HostStore, id: bigint, valid: boolean): EncodedTx {
  const msg = newMsg.validation({
    inferenceId: id,
    validatorSlot: session.primarySlot,
    valid,
    escrowId: session.id,
  });
  const preimage = validationProposerBytes(msg); // v5: plain preimage (§2.4)
  return txOf.validation({ ...msg, proposerSig: store.sign(preimage, (k) => signPreimage(k, preimage)) });
}

function voteTx(session: HostSession, store: HostStore, id: bigint, valid: boolean): EncodedTx {
  const msg = newMsg.validationVote({
    inferenceId: id,
    voterSlot: session.primarySlot,
    voteValid: valid,
    escrowId: session.id,
  });
  const preimage = validationVoteProposerBytes(msg);
  return txOf.validationVote({
    ...msg,
    proposerSig: store.sign(preimage, (k) => signPreimage(k, preimage)),
  });
}
