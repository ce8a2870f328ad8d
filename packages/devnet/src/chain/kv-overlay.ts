// Copy-on-write key/value layers. A tx runs on an overlay of the committed state; rejecting it is
// dropping the overlay, accepting it is commit(). This is how a rejected broadcast leaves every
// balance untouched, and how a failed message reverts while its fee stays charged (Cosmos SDK
// semantics: ante writes and message writes are separate branches).

export interface KvStore<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
}

export class KvOverlay<K, V> implements KvStore<K, V> {
  readonly #writes = new Map<K, V>();

  constructor(private readonly base: KvStore<K, V>) {}

  get(key: K): V | undefined {
    return this.#writes.has(key) ? this.#writes.get(key) : this.base.get(key);
  }

  set(key: K, value: V): this {
    this.#writes.set(key, value);
    return this;
  }

  commit(): void {
    for (const [key, value] of this.#writes) this.base.set(key, value);
    this.#writes.clear();
  }
}
