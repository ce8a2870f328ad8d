// The signature-recovery cache the in-process hosts of one devnet share (§2.1: verification is
// recovery, ~2 ms each in pure JS, the dominant cost of a host). Recovery is a pure function of
// (digest, signature), so sharing it changes no outcome: a diff that reaches four hosts is recovered
// once, not four times. A host also records the signatures it makes itself (receipts, Finish, votes):
// it knows their signer exactly, so the host that later applies them skips that recovery too. A
// different preimage gives a different digest, so nothing a state machine checks can be masked.
import { sha256 } from '@gonka-gateway/chain';
import { defaultRecover, type RecoverFn } from '@gonka-gateway/devshard';

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

export class RecoveryCache {
  readonly #entries = new Map<string, string | null>();

  constructor(private readonly maxEntries = 50_000) {}

  /** A RecoverFn answering from the cache first (for ApplyContext.recover). */
  readonly recover: RecoverFn = (digest, signature) => {
    const key = hex(digest) + hex(signature);
    const hit = this.#entries.get(key);
    if (hit !== undefined) return hit;
    const value = defaultRecover(digest, signature);
    this.#put(key, value);
    return value;
  };

  /** Records a signature this devnet made over Sign(preimage) with the key of `signer`. */
  remember(preimage: Uint8Array, signature: Uint8Array, signer: string): void {
    this.#put(hex(sha256(preimage)) + hex(signature), signer);
  }

  #put(key: string, value: string | null): void {
    if (this.#entries.size >= this.maxEntries)
      this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(key, value);
  }
}
