// The host transport seen by the session layer (devshard-protocol.md §4.2): one method per route the
// gateway uses. The HTTP implementation is http-transport.ts; tests and the devnet can implement the
// same interface in process, so the session code never knows which one it talks to.

import type { DiffWire, InferenceRequestWire, MetaEvent, PayloadWire, ReceiptEvent } from '../json/wire.js';
import type { DecodedTx } from '../proto/devshard-tx.js';

/** One host of the group: its cold address and its devshard base URL. */
export interface HostTarget {
  /** The validator (cold) address owning one or more slots. */
  readonly address: string;
  /** `{inference_url}/devshard/{version}` (§4.1), no trailing slash. */
  readonly baseUrl: string;
}

/** Why a chat POST is sent; selects the §4.5 deadline. */
export type ChatPurpose = 'inference' | 'protocol' | 'catch-up';

export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Overrides the transport's default deadline for this call. */
  readonly timeoutMs?: number;
}

export interface ChatOptions extends CallOptions {
  /** Default: `inference` with a payload, `protocol` without. */
  readonly purpose?: ChatPurpose;
}

/** What a chat stream carries, in order (§4.4). */
export type ChatEvent =
  | { readonly type: 'receipt'; readonly receipt: ReceiptEvent }
  /** An OpenAI chunk (or any other data line): the whole line, e.g. `data: {...}`, byte for byte. */
  | { readonly type: 'chunk'; readonly line: Uint8Array }
  | { readonly type: 'meta'; readonly meta: MetaEvent }
  /** `data: [DONE]`, byte for byte. */
  | { readonly type: 'done'; readonly line: Uint8Array };

/**
 * The events of one POST chat/completions, readable once. Iteration ends normally after [DONE] (or
 * after the receipt of a send without payload) and throws HostTransportError when the stream breaks:
 * `truncated`, `truncated_execution`, `line_too_large`, `timeout`, `aborted`, `network`, `malformed`.
 */
export interface ChatStream extends AsyncIterable<ChatEvent> {
  /** Stops reading and releases the connection (the host may keep executing). */
  cancel(): void;
  /**
   * Optional second way to read the same stream (either one, once): the events grouped as they
   * arrived, one array per read step (the body chunks received since the previous one), same order,
   * same errors (the events before a failure come first). A consumer then pays one async step per
   * read, not per event.
   */
  eventBatches?(): AsyncIterable<readonly ChatEvent[]>;
}

/** §4.3 VerifyTimeoutRequest. */
export interface VerifyTimeoutRequest {
  readonly inferenceId: bigint;
  readonly reason: 'refused' | 'execution';
  readonly payload?: PayloadWire;
  readonly diffs?: readonly DiffWire[];
}

/** §4.3 VerifyTimeoutResponse. */
export interface VerifyTimeoutResponse {
  readonly accept: boolean;
  /** Timeout vote signature (§2.4); may be absent on a rejection. */
  readonly signature?: Uint8Array;
  readonly voterSlot: number;
  readonly mempool?: readonly Uint8Array[];
  readonly rejectCause?: string;
}

/** One entry of GET diffs: a stored diff and the host's root after it. */
export interface DiffRecord {
  readonly diff: DiffWire;
  readonly stateHash?: Uint8Array;
}

export interface HostTransport {
  /** POST /sessions/{id}/chat/completions: deliver diffs, optionally run an inference (§4.4). */
  chat(
    target: HostTarget,
    escrowId: string,
    request: InferenceRequestWire,
    options?: ChatOptions,
  ): Promise<ChatStream>;
  /** POST /sessions/{id}/verify-timeout (§7.4). */
  verifyTimeout(
    target: HostTarget,
    escrowId: string,
    request: VerifyTimeoutRequest,
    options?: CallOptions,
  ): Promise<VerifyTimeoutResponse>;
  /** GET /sessions/{id}/signatures?nonce=N → slot → state signature (§8.2). */
  getSignatures(
    target: HostTarget,
    escrowId: string,
    nonce: bigint,
    options?: CallOptions,
  ): Promise<Map<number, Uint8Array>>;
  /** GET /sessions/{id}/diffs?from=&to= (recovery). */
  getDiffs(
    target: HostTarget,
    escrowId: string,
    from: bigint,
    to: bigint,
    options?: CallOptions,
  ): Promise<DiffRecord[]>;
  /** GET /sessions/{id}/mempool: the host's pending txs, decoded with their bytes kept (§10.1). */
  getMempool(target: HostTarget, escrowId: string, options?: CallOptions): Promise<DecodedTx[]>;
}
