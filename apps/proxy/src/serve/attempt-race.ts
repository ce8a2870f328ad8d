// The serve stage (architecture §5; apps/proxy README "Deadlines, hedged attempts and host health"):
// one chat request served by racing attempts on the escrows this replica owns. Each attempt is one
// nonce (devshard session infer) sent to that nonce's executor; a new attempt starts when one misses
// its receipt or first-token deadline, or fails before its first content, on a nonce whose executor
// is a participant no earlier attempt used (the session burns the nonces in between fee-only). The
// first attempt to stream content wins: its chunks reach the client, the others are told to stop
// (their session reads on for the Finish, then cancels; what they cost resolves by the protocol's
// timeout path, devshard-protocol.md §7.4). Attempts are bounded by GATEWAY_MAX_ATTEMPTS and the
// hedge budget.
//
// What the client sees: nothing until an attempt has content (role-only preamble chunks are held),
// so an empty answer, a refusal, a host error before content or a cut before content is retried
// unseen. A streamed answer that breaks after content started ends with an error event and [DONE];
// a non-streamed one is retried, since the client has seen nothing. A deterministic host error (the
// request itself is bad) is answered as that OpenAI error without another attempt.
//
// Funding: escrows that cannot fund this request's reservation are not picked (pick-escrow.ts), and
// one whose session says so anyway (`request_exceeds_escrow`, a reservation taken meanwhile) is
// passed over for the next escrow of the model, before any nonce and without blaming a host. When no
// escrow here can fund it, the request goes to an owner elsewhere or is answered 503
// `insufficient_escrow_funds` (forward-to-owner.ts), with what was found short.
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import {
  HostErrorCode,
  isFundingError,
  isHostTransportError,
  isSessionError,
  SessionErrorCode,
} from '@gonka-gateway/devshard/session';
import type {
  OwnedEscrowInfo,
  OwnedInferenceEvent,
  OwnedInferenceResult,
  OwnedSessions,
} from '@gonka-gateway/escrow-runtime';
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  assembleCompletion,
  type DataFrame,
  parseDataLines,
  streamChunkUsage,
  type Usage,
  usageOf,
} from '../chat/completion.js';
import {
  addShortfall,
  type FundingShortfall,
  pickOwned,
  type Reservation,
  shortfallAmong,
} from '../chat/pick-escrow.js';
import type { ResponseAsk } from '../chat/request-policy.js';
import { cleanChunkLine } from '../chat/response-hygiene.js';
import type { AttemptRecord } from '../chat/usage-events.js';
import { escrowNotServing, mapFailure, toGatewayError } from '../error-map.js';
import type { ProxyMetrics } from '../proxy-metrics.js';
import type { Deadlines } from './deadlines.js';
import type { HedgeBudget } from './hedge-budget.js';
import type { AttemptFailure, HostHealth } from './host-health.js';
import { classifyHostLine, mayBeError } from './host-lines.js';

export interface ServeInput {
  readonly model: string;
  /** The exact bytes the host runs. */
  readonly body: Buffer;
  readonly reservation: Reservation;
  readonly inputTokens: number;
  readonly stream: boolean;
  /** What the client asked of the answer; what else a host adds is removed (response-hygiene.ts). */
  readonly ask: ResponseAsk;
  /** Only this escrow (POST /devshard/{id}/v1/chat/completions). */
  readonly escrowId?: bigint;
  readonly capacityAware: boolean;
  /** Response headers decided by earlier stages (rate limits, a capped max_tokens). */
  readonly headers: Readonly<Record<string, string>>;
}

export interface ServeDeps {
  readonly sessions: OwnedSessions;
  readonly metrics: ProxyMetrics;
  readonly health: HostHealth;
  readonly deadlines: Deadlines;
  readonly budget: HedgeBudget;
  readonly maxAttempts: number;
}

export type ServeOutcome =
  | {
      readonly kind: 'not_here';
      /** Escrows here that could start the request but cannot fund it; absent when none. */
      readonly unfunded?: FundingShortfall;
    }
  | {
      readonly kind: 'served';
      readonly status: number;
      /** The escrow that served (or the last one tried). */
      readonly escrowId: bigint | undefined;
      /** Nonces that ran an inference for this request, the serving one last. */
      readonly nonces: readonly bigint[];
      readonly outputTokens: number;
      readonly inputTokens: number | undefined;
      readonly ttftMs: number | undefined;
      readonly upstreamMs: number;
      readonly attempts: readonly AttemptRecord[];
    };

const DONE = Buffer.from('data: [DONE]\n\n');
const SEP = Buffer.from('\n\n');
const JSON_TYPE = 'application/json; charset=utf-8';
/** An attempt that missed a deadline is given up after this many times the deadline. */
const GIVE_UP_FACTOR = 3;

type Phase = 'composing' | 'sent' | 'receipt' | 'content' | 'ended';

class Attempt {
  readonly control = new AbortController();
  phase: Phase = 'composing';
  nonce: bigint | undefined;
  participant: string | undefined;
  readonly startedAt = performance.now();
  sentAt: number | undefined;
  receiptAt: number | undefined;
  firstTokenAt: number | undefined;
  endedAt: number | undefined;
  outcome: AttemptRecord['outcome'] | undefined;
  error: string | undefined;
  readonly deadlinesHit: AttemptRecord['deadlines_hit'][number][] = [];
  burned: bigint[] = [];
  /** Chunks before content (held until the attempt wins) and, without streaming, every frame. */
  held: { readonly line: Uint8Array; readonly frame: DataFrame | undefined }[] = [];
  frames: DataFrame[] = [];
  /** Without streaming, the winner's lines after its first content, parsed together at the end. */
  rawLines: Uint8Array[] = [];
  /** When the winner's last chunk arrived (the stall deadline counts from it). */
  lastChunkAt = 0;
  outputTokens = 0;
  inputTokens: number | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Failed or given up: its events no longer matter to the client. */
  dropped = false;
  /** The winner's [DONE] arrived (its answer is complete). */
  sawDone = false;
  /** This attempt probes a host in probation (host-health.ts); its verdict must be reported. */
  probe = false;

  constructor(
    readonly index: number,
    readonly hedge: boolean,
    readonly escrow: OwnedEscrowInfo,
  ) {}

  clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  count(usage: Usage | undefined): void {
    if (usage?.prompt_tokens !== undefined) this.inputTokens = usage.prompt_tokens;
    if (usage?.completion_tokens !== undefined) this.outputTokens = usage.completion_tokens;
    else this.outputTokens++;
  }
}

/** The failure class of an attempt that ended with a host error (health counters). */
function failureOf(error: Error | undefined): AttemptFailure {
  if (!error || !isHostTransportError(error)) return 'failure';
  switch (error.code) {
    case HostErrorCode.RateLimited:
    case HostErrorCode.Unavailable:
      return 'throttled';
    case HostErrorCode.Truncated:
    case HostErrorCode.TruncatedExecution:
      return 'cut_stream';
    default:
      return 'failure';
  }
}

function shortCode(error: unknown): string {
  if (isHostTransportError(error)) return `host_${error.code}`;
  if (isSessionError(error)) return error.code;
  if (error instanceof GatewayError) return error.code;
  return 'error';
}

export function serveChat(
  request: FastifyRequest,
  reply: FastifyReply,
  input: ServeInput,
  deps: ServeDeps,
): Promise<ServeOutcome> {
  return new AttemptRace(request, reply, input, deps).run();
}

class AttemptRace {
  readonly #attempts: Attempt[] = [];
  readonly #tried = new Set<string>();
  /** Escrows that refused before a nonce (draining, no funds, no eligible host…). */
  readonly #refused = new Set<bigint>();
  /** Escrows whose session found this request too big for them (request_exceeds_escrow). */
  #unfunded: FundingShortfall | undefined;
  readonly #unfundedIds = new Set<bigint>();
  readonly #started = performance.now();
  #winner: Attempt | undefined;
  #out: Readable | undefined;
  #done = false;
  #lastError: unknown;
  #resolve!: (outcome: ServeOutcome) => void;
  readonly #result = new Promise<ServeOutcome>((resolve) => {
    this.#resolve = resolve;
  });
  #clientGone = false;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly input: ServeInput,
    private readonly deps: ServeDeps,
  ) {}

  run(): Promise<ServeOutcome> {
    this.deps.budget.deposit();
    this.reply.raw.once('close', () => {
      if (this.reply.raw.writableFinished || this.#done) return;
      // The client left: every attempt stops (the session keeps its money work, inference.ts).
      this.#clientGone = true;
      for (const a of this.#attempts) a.control.abort();
      this.#finish(499);
    });
    if (!this.#startAttempt(false)) this.#settleIfIdle();
    return this.#result;
  }

  // --- attempts -----------------------------------------------------------------------------

  #live(): Attempt[] {
    return this.#attempts.filter((a) => !a.dropped && a.phase !== 'ended');
  }

  /** Extra attempts are bounded by GATEWAY_MAX_ATTEMPTS and the hedge budget. */
  #mayStartAnother(): boolean {
    // Attempts refused before a nonce leave the list (#onRefused): every one here spent or may spend.
    return this.#attempts.length < this.deps.maxAttempts;
  }

  #pick(): OwnedEscrowInfo | undefined {
    const owned = this.deps.sessions.list();
    const i = this.input;
    if (i.escrowId !== undefined) {
      const e = owned.find((x) => x.escrowId === i.escrowId && x.routable);
      return e && !this.#refused.has(e.escrowId) ? e : undefined;
    }
    // Prefer an escrow whose next executor is healthy and untried by this request: nothing to burn,
    // and the host records steer the hedge away from a host that just failed elsewhere.
    const health = this.deps.health;
    const fresh = owned.filter(
      (e) =>
        e.nextExecutor === undefined ||
        (!this.#tried.has(e.nextExecutor) && health.stateOf(i.model, e.nextExecutor) === 'healthy'),
    );
    return (
      pickOwned(fresh, i.model, i.reservation, this.#refused, i.capacityAware) ??
      pickOwned(owned, i.model, i.reservation, this.#refused, i.capacityAware)
    );
  }

  /** Starts one attempt; false when no escrow can take it. */
  #startAttempt(hedge: boolean): boolean {
    const escrow = this.#pick();
    if (!escrow) return false;
    const attempt = new Attempt(this.#attempts.length, hedge, escrow);
    this.#attempts.push(attempt);
    if (hedge) this.deps.metrics.retries.inc();
    const i = this.input;
    const avoid = this.deps.health.avoidFor(i.model, escrow.slotCount, this.#tried, hedge);
    const maxTokens =
      escrow.maxTokensFloor !== undefined && i.reservation.maxTokens < escrow.maxTokensFloor
        ? escrow.maxTokensFloor
        : i.reservation.maxTokens;
    const events = this.deps.sessions.inferenceEvents(
      escrow.escrowId,
      {
        body: new Uint8Array(i.body.buffer, i.body.byteOffset, i.body.byteLength),
        model: i.model,
        inputLength: i.reservation.inputTokens,
        maxTokens,
        // Hosts always stream (chat-policy.ts bodyForHost): deadlines see the answer start.
        stream: true,
        ...(avoid ? { avoid } : {}),
      },
      { signal: attempt.control.signal },
    );
    void this.#follow(attempt, events);
    return true;
  }

  /** One attempt's events, read to the end: a dropped attempt's tail still brings its result. */
  async #follow(a: Attempt, batches: AsyncIterable<readonly OwnedInferenceEvent[]>): Promise<void> {
    for await (const batch of batches) for (const event of batch) this.#onEvent(a, event);
  }

  #onEvent(a: Attempt, event: OwnedInferenceEvent): void {
    switch (event.kind) {
      case 'sent':
        this.#onSent(a, event);
        break;
      case 'receipt':
        this.#onReceipt(a, event.confirmed);
        break;
      case 'line':
        this.#onChunk(a, event.line);
        break;
      case 'done':
        this.#onDone(a);
        break;
      case 'result':
        this.#onResult(a, event.result);
        break;
      case 'refused':
        this.#onRefused(a, event.error);
        break;
    }
  }

  #onSent(a: Attempt, info: Extract<OwnedInferenceEvent, { kind: 'sent' }>): void {
    a.phase = 'sent';
    a.sentAt = performance.now();
    a.nonce = info.nonce;
    a.participant = info.executor;
    this.#tried.add(info.executor);
    const health = this.deps.health;
    a.probe = health.attemptSent(this.input.model, info.executor);
    for (const b of info.burned) {
      a.burned.push(b.nonce);
      health.burned(this.input.model, b.executor, 1);
    }
    if (info.burned.length > 0)
      this.deps.metrics.burnedNonces.inc({ model: this.input.model }, info.burned.length);
    if (a.dropped) return;
    this.#arm(a, 'receipt', this.deps.deadlines.receiptMs(this.input.inputTokens));
  }

  #onReceipt(a: Attempt, confirmed: boolean): void {
    a.receiptAt = performance.now();
    if (a.dropped || a.phase === 'content') return;
    a.phase = 'receipt';
    // A receipt event without the executor's signed receipt: it refused to execute (§7.4 refused).
    if (!confirmed) {
      this.#fail(a, 'failure', 'refused');
      return;
    }
    this.#arm(a, 'first_token', this.deps.deadlines.firstTokenMs(this.input.model, this.input.inputTokens));
  }

  /** A deadline for the attempt's next step; missing it starts a hedge, 3 × it gives the attempt up. */
  #arm(a: Attempt, kind: 'receipt' | 'first_token' | 'stall', ms: number): void {
    a.clearTimer();
    a.timer = setTimeout(() => {
      a.timer = undefined;
      if (a.dropped || this.#done) return;
      if (kind === 'stall') {
        // One timer for the whole answer: chunks only move lastChunkAt, the timer re-arms itself.
        const quiet = performance.now() - a.lastChunkAt;
        if (quiet < ms) this.#arm(a, 'stall', ms - quiet);
        else this.#stalled(a);
        return;
      }
      a.deadlinesHit.push(kind);
      const why = kind === 'receipt' ? 'receipt_timeout' : 'first_token_timeout';
      this.#blame(a, why);
      this.#hedge();
      // The late attempt keeps racing; it is given up once it is far past its deadline.
      a.timer = setTimeout(
        () => {
          a.timer = undefined;
          if (!a.dropped && !this.#done && a.phase !== 'content') this.#drop(a, 'failed', why);
        },
        (GIVE_UP_FACTOR - 1) * ms,
      );
      a.timer.unref();
    }, ms);
    a.timer.unref();
  }

  #onChunk(a: Attempt, line: Uint8Array): void {
    if (a.dropped || this.#done) return;
    const winner = this.#winner;
    if (winner === a) {
      // The hot loop of a served answer: an error event is looked for as bytes first.
      if (mayBeError(line)) {
        const c = classifyHostLine(line);
        if (c.kind === 'error') {
          this.#brokeAfterContent(a, 'error_event', c.message);
          return;
        }
      }
      a.lastChunkAt = performance.now();
      this.#deliver(a, line, undefined);
      return;
    }
    if (winner !== undefined) return;
    const c = classifyHostLine(line);
    if (c.kind === 'error') {
      if (c.deterministic) {
        this.#deterministic(a, c.status, c.message);
        return;
      }
      this.#fail(a, 'error_event', c.message);
      return;
    }
    if (c.kind === 'preamble') {
      a.held.push({ line, frame: c.frame });
      return;
    }
    this.#win(a, line, c.frame);
  }

  #win(a: Attempt, line: Uint8Array, frame: DataFrame): void {
    this.#winner = a;
    a.phase = 'content';
    a.firstTokenAt = performance.now();
    if (a.receiptAt !== undefined) {
      this.deps.deadlines.sample(this.input.model, this.input.inputTokens, a.firstTokenAt - a.receiptAt);
    }
    // The others stop: their sessions read on for the Finish, then cancel (inference.ts ClientWatch).
    for (const other of this.#attempts) {
      if (other === a || other.phase === 'ended') continue;
      if (!other.dropped) this.#drop(other, 'cancelled', 'lost the race');
      else other.control.abort();
    }
    a.lastChunkAt = a.firstTokenAt;
    this.#arm(a, 'stall', this.deps.deadlines.stallMs);
    const held = a.held;
    a.held = [];
    for (const h of held) this.#deliver(a, h.line, h.frame);
    this.#deliver(a, line, frame);
  }

  /** One chunk to the client (streamed) or to the completion (not); `parsed` when classified already. */
  #deliver(a: Attempt, line: Uint8Array, parsed: DataFrame | undefined): void {
    if (!this.input.stream) {
      if (parsed) a.frames.push(parsed);
      else a.rawLines.push(line);
      return;
    }
    a.count(streamChunkUsage(line));
    const clean = cleanChunkLine(line, this.input.ask);
    if (clean) this.#open(a).push(Buffer.concat([clean, SEP]));
  }

  #onDone(a: Attempt): void {
    if (a.dropped || this.#done) return;
    if (this.#winner === a) {
      // The end is shown at once; the response closes with the session's result, once the
      // receipt's Confirm and the meta's Finish are stored (inference.ts), as the client learns
      // that its answer is complete.
      a.clearTimer();
      a.sawDone = true;
      a.endedAt = performance.now();
      if (this.input.stream) this.#open(a).push(DONE);
      return;
    }
    if (this.#winner === undefined) this.#fail(a, 'empty_answer', 'no content before [DONE]');
  }

  /** The session's result: after [DONE], after a failure, or after the tail of a dropped attempt. */
  #onResult(a: Attempt, result: OwnedInferenceResult): void {
    a.clearTimer();
    a.phase = 'ended';
    a.endedAt ??= performance.now();
    a.nonce = result.nonce;
    a.participant ??= result.executor;
    if (a.dropped || this.#done) {
      if (a.probe) this.deps.health.probeAbandoned(this.input.model, a.participant);
      return;
    }
    if (this.#winner === a && a.sawDone) {
      this.#succeed(a);
      return;
    }
    if (result.cut !== undefined) {
      this.#cutByOwner(a, result.cut);
      return;
    }
    if (result.status === 'completed') {
      this.#fail(a, 'empty_answer', 'no content');
      return;
    }
    this.#lastError = result.error;
    if (this.#winner === a) {
      this.#brokeAfterContent(a, failureOf(result.error), result.error?.message ?? 'stream broke');
      return;
    }
    this.#fail(a, failureOf(result.error), shortCode(result.error));
  }

  /**
   * A forced settle cut the attempt (escrow-runtime owned-sessions.ts): its escrow is being settled
   * now, no host is to blame. A streamed answer already under way ends with an error event naming
   * the cause; otherwise the client has seen nothing and another escrow may serve the request. The
   * attempt's record keeps the cause (`cut_<cause>`).
   */
  #cutByOwner(a: Attempt, cause: string): void {
    this.#refused.add(a.escrow.escrowId);
    this.#drop(a, 'cancelled', `cut_${cause}`);
    const error = new GatewayError(
      'service_unavailable',
      `the escrow serving this request was settled by the operator (${cause})`,
    );
    if (this.#winner === a && this.input.stream && this.#out) {
      this.#out.push(Buffer.from(`data: ${JSON.stringify(error.toBody())}\n\n`));
      this.#out.push(DONE);
      this.#out.push(null);
      this.#resolveServed(error.status, a);
      return;
    }
    if (this.#winner === a) this.#winner = undefined;
    this.#lastError = error;
    if (!this.#clientGone && this.#mayStartAnother()) this.#startAttempt(true);
    this.#settleIfIdle();
  }

  /** The session refused before taking a nonce (SessionError, NotOwnedError): another escrow may. */
  #onRefused(a: Attempt, error: unknown): void {
    a.clearTimer();
    a.phase = 'ended';
    a.endedAt = performance.now();
    a.outcome = 'failed';
    a.error = shortCode(error);
    a.dropped = true;
    if (this.#done) return;
    this.#refused.add(a.escrow.escrowId);
    if (isFundingError(error)) {
      if (error.code === SessionErrorCode.RequestExceedsEscrow) {
        this.#unfunded = addShortfall(this.#unfunded, error.needed, error.available);
        this.#unfundedIds.add(a.escrow.escrowId);
      }
      // A funding verdict never hides a failure this request already met elsewhere.
      this.#lastError ??= error;
    } else {
      this.#lastError = error;
    }
    // Not a spent attempt: try the next escrow without counting against the budget.
    const retry =
      !this.#clientGone &&
      (mapFailure(error).tryNextEscrow ||
        (isSessionError(error) && error.code === SessionErrorCode.NoEligibleHost));
    this.#attempts.splice(this.#attempts.indexOf(a), 1);
    if (retry && this.#startAttempt(a.hedge)) return;
    this.#attempts.push(a);
    this.#settleIfIdle();
  }

  // --- failures -----------------------------------------------------------------------------

  /** Counts a failure against the attempt's host (health record and metrics). */
  #blame(a: Attempt, why: AttemptFailure, detail?: string): void {
    if (a.participant === undefined) return;
    this.deps.health.failed(this.input.model, a.participant, why, detail);
    this.deps.metrics.hostFailures.inc({ participant: a.participant, model: this.input.model, reason: why });
  }

  #drop(a: Attempt, outcome: AttemptRecord['outcome'], error: string): void {
    // A probe ended without a verdict on its host (it lost the race, the client left).
    if (a.probe && outcome !== 'failed' && a.participant !== undefined) {
      this.deps.health.probeAbandoned(this.input.model, a.participant);
    }
    a.clearTimer();
    a.dropped = true;
    a.outcome = outcome;
    a.error = error;
    a.endedAt ??= performance.now();
    a.control.abort();
  }

  /** The attempt failed before content: counted against its host; another attempt may start. */
  #fail(a: Attempt, why: AttemptFailure, detail: string): void {
    // A deadline it missed was counted already.
    if (!a.deadlinesHit.length) this.#blame(a, why, detail);
    this.#lastError ??= new GatewayError('upstream_error', `the host failed (${why})`);
    if (why === 'empty_answer') {
      this.#lastError = new GatewayError('upstream_error', 'the host returned an empty answer');
    }
    this.#drop(a, 'failed', why);
    if (this.#winner === a) this.#winner = undefined;
    this.#hedge();
    this.#settleIfIdle();
  }

  /** Starts another attempt if the cap and the budget allow. */
  #hedge(): void {
    if (this.#done || this.#winner !== undefined || this.#clientGone) return;
    if (!this.#mayStartAnother()) return;
    if (!this.deps.budget.take()) {
      this.deps.metrics.hedgesRefused.inc();
      return;
    }
    if (!this.#startAttempt(true)) this.deps.budget.deposit();
  }

  /** Nothing left running and no winner: the request ends with the last error. */
  #settleIfIdle(): void {
    if (this.#done || this.#winner !== undefined) return;
    if (this.#live().length > 0) return;
    const spent = this.#attempts.some((a) => a.nonce !== undefined);
    const last = this.#lastError;
    if (!spent && (last === undefined || escrowNotServing(last) || isFundingError(last))) {
      this.#done = true;
      const unfunded = this.#shortfall();
      this.#resolve(unfunded ? { kind: 'not_here', unfunded } : { kind: 'not_here' });
      return;
    }
    const error = this.#lastError
      ? toGatewayError(this.#lastError)
      : new GatewayError('no_escrow_available', `no escrow can serve model ${this.input.model} now`);
    this.#answerError(error);
  }

  /** Local escrows that cannot fund the request: the sessions' verdicts and the routing inputs'. */
  #shortfall(): FundingShortfall | undefined {
    const i = this.input;
    let owned = this.deps.sessions.list();
    if (i.escrowId !== undefined) owned = owned.filter((e) => e.escrowId === i.escrowId);
    const estimated = shortfallAmong(owned, i.model, i.reservation, this.#unfundedIds);
    if (!estimated) return this.#unfunded;
    if (!this.#unfunded) return estimated;
    const merged = addShortfall(this.#unfunded, estimated.needed, estimated.available);
    return { ...merged, escrows: this.#unfunded.escrows + estimated.escrows };
  }

  #deterministic(a: Attempt, status: number, message: string): void {
    this.#drop(a, 'deterministic_error', `host_${status}`);
    for (const other of this.#attempts)
      if (other !== a && !other.dropped) this.#drop(other, 'cancelled', 'lost');
    const text = message ? `the model refused the request: ${message}` : 'the model refused the request';
    this.#answerError(new GatewayError('invalid_request', text));
  }

  #stalled(a: Attempt): void {
    a.deadlinesHit.push('stall');
    this.#brokeAfterContent(a, 'stall', 'no chunk within the stall deadline');
  }

  /** The winner broke after content: a streamed client gets an error event; otherwise retried. */
  #brokeAfterContent(a: Attempt, why: AttemptFailure, detail: string): void {
    this.#blame(a, why, detail);
    if (this.input.stream && this.#out) {
      this.#drop(a, 'failed', why);
      const error = new GatewayError(
        'upstream_error',
        `the host's answer broke off (${why}); it is incomplete`,
      );
      this.#out.push(Buffer.from(`data: ${JSON.stringify(error.toBody())}\n\n`));
      this.#out.push(DONE);
      this.#out.push(null);
      this.#resolveServed(502, a);
      return;
    }
    this.#winner = undefined;
    a.frames = [];
    a.rawLines = [];
    this.#drop(a, 'failed', why);
    this.#lastError = new GatewayError('upstream_error', `the host's answer broke off (${why})`);
    this.#hedge();
    this.#settleIfIdle();
  }

  // --- answers ------------------------------------------------------------------------------

  #open(a: Attempt): Readable {
    if (this.#out) return this.#out;
    this.request.raw.socket?.setNoDelay(true);
    // Chunks are pushed into a plain Readable that Fastify pipes to the socket (no backpressure wait).
    this.#out = new Readable({ read() {} });
    void this.reply
      .status(200)
      .headers({
        ...this.input.headers,
        'x-devshard-id': a.escrow.escrowId.toString(),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      })
      .send(this.#out);
    return this.#out;
  }

  #succeed(a: Attempt): void {
    a.outcome = 'served';
    a.endedAt ??= performance.now();
    if (!this.input.stream) {
      // The whole answer is in: its lines are parsed once, together, and its usage read from them.
      a.frames = a.frames.concat(parseDataLines(a.rawLines));
      a.rawLines = [];
      a.outputTokens = 0;
      for (const f of a.frames) a.count(usageOf(f.value));
    }
    a.clearTimer();
    const firstTokenMs =
      a.firstTokenAt !== undefined && a.receiptAt !== undefined ? a.firstTokenAt - a.receiptAt : undefined;
    const seconds = a.firstTokenAt !== undefined ? (a.endedAt - a.firstTokenAt) / 1000 : 0;
    if (a.participant !== undefined) {
      this.deps.health.succeeded(this.input.model, a.participant, {
        receiptMs: a.receiptAt !== undefined && a.sentAt !== undefined ? a.receiptAt - a.sentAt : undefined,
        firstTokenMs,
        tokensPerSecond: seconds > 0.05 ? a.outputTokens / seconds : undefined,
      });
    }
    if (this.input.stream) {
      this.#open(a).push(null);
    } else {
      const body = assembleCompletion(
        a.frames,
        { id: `chatcmpl-${this.request.id}`, model: this.input.model },
        this.input.ask,
      );
      // JSON text already: the content type Fastify gives an object, without serializing it again.
      void this.reply
        .status(200)
        .headers({ ...this.input.headers, 'x-devshard-id': a.escrow.escrowId.toString() })
        .type(JSON_TYPE)
        .send(body);
    }
    this.#resolveServed(200, a);
  }

  #answerError(error: GatewayError): void {
    const last = this.#attempts.at(-1);
    if (this.#out) {
      this.#out.push(Buffer.from(`data: ${JSON.stringify(error.toBody())}\n\n`));
      this.#out.push(DONE);
      this.#out.push(null);
    } else if (!this.reply.sent) {
      const headers: Record<string, string> = { ...this.input.headers };
      if (last) headers['x-devshard-id'] = last.escrow.escrowId.toString();
      if (error.status === 503 || error.status === 429) headers['retry-after'] ??= '1';
      if (error.status >= 500) headers['x-should-retry'] = 'true';
      void this.reply.status(error.status).headers(headers).send(error.toBody());
    }
    this.#resolveServed(error.status, last);
  }

  #finish(status: number): void {
    if (this.#done) return;
    this.#resolveServed(status, this.#winner ?? this.#attempts.at(-1));
  }

  #resolveServed(status: number, served: Attempt | undefined): void {
    if (this.#done) return;
    this.#done = true;
    for (const a of this.#attempts) {
      a.clearTimer();
      if (a !== served && !a.dropped) this.#drop(a, 'cancelled', 'ended');
    }
    const sessions = this.deps.sessions;
    const attempts = this.#attempts.map((a): AttemptRecord => {
      const at = (t: number | undefined) => (t === undefined ? undefined : Math.round(t - this.#started));
      const cost = a.nonce === undefined ? undefined : sessions.inferenceCost(a.escrow.escrowId, a.nonce);
      return {
        escrow_id: a.escrow.escrowId.toString(),
        nonce: a.nonce?.toString() ?? '',
        participant: a.participant ?? '',
        hedge: a.hedge,
        started_ms: at(a.startedAt)!,
        ...(a.receiptAt !== undefined ? { receipt_ms: at(a.receiptAt) } : {}),
        ...(a.firstTokenAt !== undefined ? { first_token_ms: at(a.firstTokenAt) } : {}),
        ...(a.endedAt !== undefined ? { ended_ms: at(a.endedAt) } : {}),
        deadlines_hit: a.deadlinesHit,
        outcome: a.outcome ?? (a === served && status === 200 ? 'served' : 'failed'),
        ...(a.error !== undefined ? { error: a.error } : {}),
        output_tokens: a.outputTokens,
        ...(cost ? { cost: cost.cost.toString(), cost_final: cost.final } : {}),
        ...(a.burned.length > 0 ? { burned_nonces: a.burned.map(String) } : {}),
      };
    });
    const nonces = this.#attempts
      .filter((a) => a !== served && a.nonce !== undefined)
      .map((a) => a.nonce!)
      .concat(served?.nonce !== undefined ? [served.nonce] : []);
    this.#resolve({
      kind: 'served',
      status,
      escrowId: served?.escrow.escrowId,
      nonces,
      outputTokens: served?.outputTokens ?? 0,
      inputTokens: served?.inputTokens,
      // Time to first token is the first byte to the client: only a stream has one before the end.
      ttftMs:
        this.input.stream && this.#winner?.firstTokenAt !== undefined
          ? this.#winner.firstTokenAt - this.#started
          : undefined,
      upstreamMs: performance.now() - this.#started,
      attempts,
    });
  }
}
