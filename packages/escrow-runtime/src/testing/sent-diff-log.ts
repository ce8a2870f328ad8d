// A HostTransport wrapper that appends every diff it is about to send (chat and verify-timeout) to a
// file, synchronously and before the request leaves, so a test can check across processes — even
// ones killed with SIGKILL — that no nonce of an escrow was ever sent with two different signatures
// (issue 8 §8: every diff a host received equals its stored row).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type {
  CallOptions,
  ChatOptions,
  ChatStream,
  DecodedTx,
  DiffRecord,
  DiffWire,
  HostTarget,
  HostTransport,
  InferenceRequestWire,
  VerifyTimeoutRequest,
  VerifyTimeoutResponse,
} from '@gonka-gateway/devshard';

export interface SentDiff {
  readonly replicaId: string;
  readonly escrowId: string;
  readonly host: string;
  readonly nonce: string;
  readonly txs: string;
  readonly userSig: string;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export class SentDiffLog implements HostTransport {
  constructor(
    private readonly inner: HostTransport,
    private readonly file: string,
    private readonly replicaId: string,
  ) {}

  #record(target: HostTarget, escrowId: string, diffs: readonly DiffWire[] | undefined): void {
    if (!diffs || diffs.length === 0) return;
    const lines = diffs.map((d) =>
      JSON.stringify({
        replicaId: this.replicaId,
        escrowId,
        host: target.address,
        nonce: d.nonce.toString(),
        txs: hex(d.txs),
        userSig: hex(d.userSig),
      } satisfies SentDiff),
    );
    appendFileSync(this.file, `${lines.join('\n')}\n`);
  }

  chat(
    target: HostTarget,
    escrowId: string,
    request: InferenceRequestWire,
    options?: ChatOptions,
  ): Promise<ChatStream> {
    this.#record(target, escrowId, request.diffs);
    return this.inner.chat(target, escrowId, request, options);
  }

  verifyTimeout(
    target: HostTarget,
    escrowId: string,
    request: VerifyTimeoutRequest,
    options?: CallOptions,
  ): Promise<VerifyTimeoutResponse> {
    this.#record(target, escrowId, request.diffs);
    return this.inner.verifyTimeout(target, escrowId, request, options);
  }

  getSignatures(target: HostTarget, escrowId: string, nonce: bigint, options?: CallOptions) {
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

export function readSentDiffs(file: string): SentDiff[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as SentDiff);
}
