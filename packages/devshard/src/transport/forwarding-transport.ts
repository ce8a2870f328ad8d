// A HostTransport that hands every call to another one unchanged: the base of wrappers that watch
// or alter only some calls (a test's recorder, a write-ahead log of sent diffs) and pass the rest on.
import type { InferenceRequestWire } from '../json/wire.js';
import type { DecodedTx } from '../proto/devshard-tx.js';
import type {
  CallOptions,
  ChatOptions,
  ChatStream,
  DiffRecord,
  HostTarget,
  HostTransport,
  VerifyTimeoutRequest,
  VerifyTimeoutResponse,
} from './types.js';

export class ForwardingTransport implements HostTransport {
  constructor(protected readonly inner: HostTransport) {}

  chat(
    target: HostTarget,
    escrowId: string,
    request: InferenceRequestWire,
    options?: ChatOptions,
  ): Promise<ChatStream> {
    return this.inner.chat(target, escrowId, request, options);
  }

  verifyTimeout(
    target: HostTarget,
    escrowId: string,
    request: VerifyTimeoutRequest,
    options?: CallOptions,
  ): Promise<VerifyTimeoutResponse> {
    return this.inner.verifyTimeout(target, escrowId, request, options);
  }

  getSignatures(
    target: HostTarget,
    escrowId: string,
    nonce: bigint,
    options?: CallOptions,
  ): Promise<Map<number, Uint8Array>> {
    return this.inner.getSignatures(target, escrowId, nonce, options);
  }

  getDiffs(
    target: HostTarget,
    escrowId: string,
    from: bigint,
    to: bigint,
    options?: CallOptions,
  ): Promise<DiffRecord[]> {
    return this.inner.getDiffs(target, escrowId, from, to, options);
  }

  getMempool(target: HostTarget, escrowId: string, options?: CallOptions): Promise<DecodedTx[]> {
    return this.inner.getMempool(target, escrowId, options);
  }
}
