// A HostTransport wrapper that appends every diff it is about to send (chat and verify-timeout) to a
// file, synchronously and before the request leaves, so a test can check across processes — even
// ones killed with SIGKILL — that no nonce of an escrow was ever sent with two different signatures
// (architecture §2 item 3: every diff a host received equals its stored row).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type { DiffWire, InferenceRequestWire } from '@gonka-gateway/devshard';
import {
  type CallOptions,
  type ChatOptions,
  type ChatStream,
  ForwardingTransport,
  type HostTarget,
  type HostTransport,
  type VerifyTimeoutRequest,
  type VerifyTimeoutResponse,
} from '@gonka-gateway/devshard/session';

export interface SentDiff {
  readonly replicaId: string;
  readonly escrowId: string;
  readonly host: string;
  readonly nonce: string;
  readonly txs: string;
  readonly userSig: string;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export class SentDiffLog extends ForwardingTransport {
  constructor(
    inner: HostTransport,
    private readonly file: string,
    private readonly replicaId: string,
  ) {
    super(inner);
  }

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

  override chat(
    target: HostTarget,
    escrowId: string,
    request: InferenceRequestWire,
    options?: ChatOptions,
  ): Promise<ChatStream> {
    this.#record(target, escrowId, request.diffs);
    return this.inner.chat(target, escrowId, request, options);
  }

  override verifyTimeout(
    target: HostTarget,
    escrowId: string,
    request: VerifyTimeoutRequest,
    options?: CallOptions,
  ): Promise<VerifyTimeoutResponse> {
    this.#record(target, escrowId, request.diffs);
    return this.inner.verifyTimeout(target, escrowId, request, options);
  }
}

export function readSentDiffs(file: string): SentDiff[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as SentDiff);
}
