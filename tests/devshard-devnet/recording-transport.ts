// A HostTransport that records each chat POST before handing it to the real transport, so tests can
// see what the session sent where (catch-up chunks, §7.3) — and can make a send fail before it leaves,
// as when the gateway process dies between the write-ahead and the send (architecture §2.3).
import type { InferenceRequestWire } from '@gonka-gateway/devshard';
import {
  type ChatEvent,
  type ChatOptions,
  type ChatPurpose,
  type ChatStream,
  ForwardingTransport,
  type HostTarget,
} from '@gonka-gateway/devshard/session';

export interface ChatSend {
  readonly address: string;
  readonly purpose: ChatPurpose;
  /** InferenceRequest.nonce. */
  readonly nonce: bigint;
  readonly diffNonces: readonly bigint[];
  readonly payload: boolean;
}

/** A chat stream whose events reach the session only once `gate` resolves (a slow network path). */
class HeldStream implements ChatStream {
  constructor(
    private readonly inner: ChatStream,
    private readonly gate: Promise<void>,
  ) {}

  cancel(): void {
    this.inner.cancel();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatEvent, void, undefined> {
    await this.gate;
    yield* this.inner;
  }
}

export class RecordingTransport extends ForwardingTransport {
  readonly sends: ChatSend[] = [];
  /** When set, a chat POST for which it returns an error throws it instead of being sent. */
  failBeforeSend: ((send: ChatSend) => Error | undefined) | undefined;
  /**
   * When set, the answer of a chat POST for which it returns a promise reaches the session only when
   * the promise resolves (the host has answered long before: a slow path back to the gateway).
   */
  holdAnswer: ((send: ChatSend) => Promise<void> | undefined) | undefined;

  override chat(
    target: HostTarget,
    escrowId: string,
    request: InferenceRequestWire,
    options?: ChatOptions,
  ): Promise<ChatStream> {
    const send: ChatSend = {
      address: target.address,
      purpose: options?.purpose ?? (request.payload ? 'inference' : 'protocol'),
      nonce: request.nonce,
      diffNonces: request.diffs.map((d) => d.nonce),
      payload: request.payload !== undefined,
    };
    const failure = this.failBeforeSend?.(send);
    if (failure) return Promise.reject(failure);
    this.sends.push(send);
    const gate = this.holdAnswer?.(send);
    const stream = this.inner.chat(target, escrowId, request, options);
    return gate ? stream.then((st) => new HeldStream(st, gate)) : stream;
  }
}
