// Test support for the host tests: a user side made only of @gonka-gateway/devshard's
// public API — composeDiff + signTestDiff (below) for the diffs, diffToWire + encodeInferenceRequest + signRequest
// for the requests, decodeDevshardEvent for the answers — and fetch. It follows the user procedures
// of devshard-protocol.md §7.1–§7.3 just far enough to drive the hosts; it is not a gateway client.
import type { PrivateKey } from '@gonka-gateway/chain';
import {
  type ApplyContext,
  composeDiff,
  type DecodedTx,
  decodeTx,
  dedupKey,
  diffSigningBytes,
  diffToWire,
  type EncodedTx,
  isAcceptedMempoolTx,
  memoizeRecover,
  newMsg,
  orderCandidates,
  type PayloadWire,
  promptHash,
  type SessionState,
  type SignedDiff,
  signPreimage,
  signRequest,
  txOf,
  type UnsignedDiff,
} from '@gonka-gateway/devshard';
import {
  type DevshardEvent,
  decodeDevshardEvent,
  encodeInferenceRequest,
} from '@gonka-gateway/devshard/session';
import type { EscrowRow } from '../chain/stores.js';
import type { Devnet } from '../devnet.js';
import { QWEN_MODEL } from '../genesis.js';
import { sessionOfRow } from '../host/session-store.js';
import { account, createEscrow, TxFactory } from './test-devnet.js';

/**
 * Signs a diff as the creator `key` would (§2.4). The devshard package exports no diff signer (only
 * its session's write-ahead path signs); host tests drive hosts by hand and forge diffs, so they
 * build the signature from the public recipe.
 */
export function signTestDiff(key: PrivateKey, escrowId: string, diff: UnsignedDiff): SignedDiff {
  return { ...diff, userSig: signPreimage(key, diffSigningBytes(escrowId, diff)) };
}

export interface ChatAnswer {
  status: number;
  /** Error body or the raw SSE text. */
  text: string;
  events: DevshardEvent[];
  /** Model data lines (chunks or one chat.completion), as their JSON text. */
  modelLines: string[];
  done: boolean;
  headers: Headers;
}

/** Parses an SSE body into protocol events, model lines and [DONE]. */
export function parseSse(text: string): Pick<ChatAnswer, 'events' | 'modelLines' | 'done'> {
  const events: DevshardEvent[] = [];
  const modelLines: string[] = [];
  let done = false;
  for (const block of text.split('\n\n')) {
    if (!block.startsWith('data: ')) continue;
    const data = block.slice(6);
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    const event = decodeDevshardEvent(data);
    if (event.type === 'other') modelLines.push(data);
    else events.push(event);
  }
  return { events, modelLines, done };
}

export const chatBody = (text: string, extra: Record<string, unknown> = {}) =>
  new TextEncoder().encode(
    JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content: text }], ...extra }),
  );

/** The user of one escrow: composer replica, diff log, pending queue, per-host sync nonce. */
export class TestUser {
  state: SessionState;
  readonly diffs: SignedDiff[] = [];
  pending: EncodedTx[] = [];
  readonly seen = new Set<string>();
  readonly hostSync = new Map<string, bigint>();
  readonly ctx: ApplyContext;
  /** The clock request headers and started_at use: the hosts' clock unless a test overrides it. */
  now: () => bigint;

  constructor(
    readonly devnet: Devnet,
    readonly key: PrivateKey,
    readonly row: EscrowRow,
    readonly version = 'v5',
  ) {
    const chain = devnet.core.chain;
    this.ctx = {
      isWarmKey: (cold, signer) => chain.hasWarmKeyGrant(cold, signer),
      recover: memoizeRecover(),
    };
    const params = devnet.chain.params().devshardEscrow;
    this.state = sessionOfRow(row, version, params);
    this.now = () => devnet.devshardHosts.nowSeconds();
  }

  static async open(devnet: Devnet, creator = 'creator-0', version = 'v5'): Promise<TestUser> {
    const acc = account(devnet, creator);
    const row = await createEscrow(devnet, new TxFactory(devnet), acc);
    return new TestUser(devnet, acc.key, row, version);
  }

  get id(): string {
    return this.state.escrowId;
  }

  get slots(): readonly string[] {
    return this.row.slots;
  }

  /** Distinct host addresses of the group, in slot order of first appearance. */
  get hostAddresses(): string[] {
    return [...new Set(this.row.slots)];
  }

  executorOf(nonce: bigint): string {
    return this.row.slots[Number(nonce % BigInt(this.row.slots.length))]!;
  }

  url(address: string, route: string, version = this.version, id = this.id): string {
    const host = this.devnet.participants.find((p) => p.address === address)!;
    return `${host.inferenceUrl}/devshard/${version}/sessions/${id}/${route}`;
  }

  /** Composes the next diff (pending queue first, then `extra`), signs it, logs it (§7.1). */
  compose(extra: EncodedTx[] = [], options: { withRoot?: boolean } = {}): SignedDiff {
    const composed = composeDiff(this.state, orderCandidates(this.pending, extra), this.ctx, {
      withPostStateRoot: options.withRoot ?? true,
    });
    const signed = signTestDiff(this.key, this.id, composed.diff);
    this.state = composed.state;
    this.diffs.push(signed);
    this.pending = [];
    return signed;
  }

  /** A StartInference for the next nonce and its payload (§7.1 step 2). */
  start(prompt: Uint8Array, options: { maxTokens?: bigint; startedAt?: bigint } = {}) {
    const nonce = this.state.latestNonce + 1n;
    const maxTokens = options.maxTokens ?? 100n;
    const startedAt = options.startedAt ?? this.now();
    const msg = newMsg.startInference({
      inferenceId: nonce,
      promptHash: promptHash(prompt),
      model: QWEN_MODEL,
      inputLength: 20n,
      maxTokens,
      startedAt,
      protocolVersion: this.version,
    });
    const payload: PayloadWire = { prompt, model: QWEN_MODEL, inputLength: 20n, maxTokens, startedAt };
    return { tx: txOf.startInference(msg), payload };
  }

  /** Diffs a host has not acknowledged, in order. */
  catchUp(address: string, upTo = this.state.latestNonce): SignedDiff[] {
    const synced = this.hostSync.get(address) ?? 0n;
    return this.diffs.filter((d) => d.nonce > synced && d.nonce <= upTo);
  }

  /** A signed POST with the creator key (or `key`) and the user clock. */
  async post(
    address: string,
    route: string,
    body: Uint8Array,
    opts: { key?: PrivateKey; timestamp?: bigint; version?: string; id?: string; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const ts = opts.timestamp ?? this.now();
    const id = opts.id ?? this.id;
    return fetch(this.url(address, route, opts.version, id), {
      method: 'POST',
      ...(opts.signal ? { signal: opts.signal } : {}),
      headers: {
        'content-type': 'application/json',
        'x-devshard-signature': signRequest(opts.key ?? this.key, id, body, ts),
        'x-devshard-timestamp': ts.toString(),
      },
      body,
    });
  }

  /** POST chat/completions with the catch-up diffs for `address`, then processes the answer (§7.2). */
  async chat(
    address: string,
    opts: {
      payload?: PayloadWire;
      stream?: boolean;
      diffs?: SignedDiff[];
      nonce?: bigint;
      process?: boolean;
    } = {},
  ): Promise<ChatAnswer> {
    const diffs = opts.diffs ?? this.catchUp(address);
    const body = new TextEncoder().encode(
      encodeInferenceRequest({
        diffs: diffs.map(diffToWire),
        nonce: opts.nonce ?? this.state.latestNonce,
        ...(opts.payload ? { payload: opts.payload } : {}),
        ...(opts.stream ? { stream: true } : {}),
      }),
    );
    const res = await this.post(address, 'chat/completions', body);
    const text = await res.text();
    const answer: ChatAnswer =
      res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
        ? { status: res.status, text, headers: res.headers, ...parseSse(text) }
        : { status: res.status, text, headers: res.headers, events: [], modelLines: [], done: false };
    if (res.status === 200 && opts.process !== false)
      this.process(address, answer, opts.nonce ?? this.state.latestNonce);
    return answer;
  }

  /**
   * POST chat/completions and read the stream only until `until` appears (or it ends or breaks), for
   * streams that stall or get cut. `abort()` leaves; `sse` is what arrived, parsed.
   */
  async openChat(address: string, payload: PayloadWire | undefined, until: string) {
    const body = new TextEncoder().encode(
      encodeInferenceRequest({
        diffs: this.catchUp(address).map(diffToWire),
        nonce: this.state.latestNonce,
        ...(payload ? { payload, stream: true } : {}),
      }),
    );
    const ts = this.now();
    const controller = new AbortController();
    const res = await fetch(this.url(address, 'chat/completions'), {
      method: 'POST',
      body,
      signal: controller.signal,
      headers: {
        'x-devshard-signature': signRequest(this.key, this.id, body, ts),
        'x-devshard-timestamp': ts.toString(),
      },
    });
    const reader = res.body!.getReader();
    let text = '';
    let ended = false;
    let failed = false;
    try {
      while (!text.includes(until)) {
        const { value, done } = await reader.read();
        if (done) {
          ended = true;
          break;
        }
        text += Buffer.from(value).toString('utf8');
      }
    } catch {
      failed = true; // the connection broke mid-stream
    }
    const answer: ChatAnswer = { status: res.status, text, headers: res.headers, ...parseSse(text) };
    return { answer, ended, failed, abort: () => controller.abort() };
  }

  /** §7.2: sync nonce, receipt → ConfirmStart, mempool txs (filtered, deduplicated) → queue. */
  process(address: string, answer: ChatAnswer, nonce: bigint): void {
    for (const e of answer.events) {
      if (e.type === 'receipt') {
        const r = e.event;
        const synced = this.hostSync.get(address) ?? 0n;
        if (r.nonce > synced) this.hostSync.set(address, r.nonce);
        if (r.receipt) {
          this.queue(
            txOf.confirmStart(
              newMsg.confirmStart({
                inferenceId: nonce,
                executorSig: r.receipt,
                confirmedAt: r.confirmedAt ?? 0n,
              }),
            ),
          );
        }
      } else if (e.type === 'meta') {
        for (const bytes of e.event.mempool) this.queue(decodeTx(bytes));
      }
    }
  }

  queue(tx: EncodedTx | DecodedTx): void {
    if (!isAcceptedMempoolTx(tx.tx)) return;
    const key = dedupKey(tx.tx);
    if (key !== undefined) {
      if (this.seen.has(key)) return;
      this.seen.add(key);
    }
    this.pending.push(tx);
  }

  /** One inference: compose the start diff, send it with catch-up to its executor, process the answer. */
  async infer(text: string, opts: { stream?: boolean; maxTokens?: bigint } = {}) {
    const prompt = chatBody(text, opts.stream ? { stream: true } : {});
    const { tx, payload } = this.start(
      prompt,
      opts.maxTokens === undefined ? {} : { maxTokens: opts.maxTokens },
    );
    const diff = this.compose([tx]);
    const executor = this.executorOf(diff.nonce);
    const answer = await this.chat(executor, { payload, ...(opts.stream ? { stream: true } : {}) });
    return { diff, executor, payload, answer };
  }

  /** A diff with no new work (pending txs only), sent to the host of its nonce. */
  async tick(): Promise<ChatAnswer> {
    const diff = this.compose();
    return this.chat(this.executorOf(diff.nonce));
  }
}

export const receiptOf = (a: ChatAnswer) => {
  const e = a.events.find((x) => x.type === 'receipt');
  return e?.type === 'receipt' ? e.event : undefined;
};

export const metaOf = (a: ChatAnswer) => {
  const e = a.events.find((x) => x.type === 'meta');
  return e?.type === 'meta' ? e.event : undefined;
};
