// Settlement progress (devshard-protocol.md §8): the verified state signatures at the final nonce,
// by host address (§8.2), the finalize document once stored (§8.3), and the finalize run in progress.
// Signatures are added as answers arrive (response.ts) and asked for by signature-collection.ts; the
// document is set by finalize.ts after its fenced write. A leaf: it holds data only.

/** What the session has gathered towards its finalize document. */
export class SettlementProgress {
  readonly #signatures = new Map<string, Uint8Array>();
  #document: string | undefined;
  #run: Promise<unknown> | undefined;

  /** `document`: the finalize document JSON already stored for this escrow, if any. */
  constructor(document: string | undefined) {
    this.#document = document;
  }

  /**
   * Verified state signatures at the final nonce, by host address, gathered while in Settlement
   * (finalize rounds, catch-up receipts, GET signatures; §8.2).
   */
  get signatures(): ReadonlyMap<string, Uint8Array> {
    return this.#signatures;
  }

  hasSignature(host: string): boolean {
    return this.#signatures.has(host);
  }

  /** A state signature of `host` at the final nonce, already verified (response.ts). */
  addSignature(host: string, signature: Uint8Array): void {
    this.#signatures.set(host, signature);
  }

  /** The stored finalize document JSON, once written (§8.3). */
  get document(): string | undefined {
    return this.#document;
  }

  /** The document is durable in the store (finalize.ts writes it first). */
  documentStored(json: string): void {
    this.#document = json;
  }

  /** Runs `finalize` unless a run is in progress, which concurrent callers then share. */
  shared<T>(finalize: () => Promise<T>): Promise<T> {
    if (!this.#run) {
      this.#run = finalize().finally(() => {
        this.#run = undefined;
      });
    }
    return this.#run as Promise<T>;
  }
}
