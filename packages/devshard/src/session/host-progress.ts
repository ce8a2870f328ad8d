// How far each host is (devshard-protocol.md §7.1 host_sync_nonce): per physical host (cold address),
// every slot of it holding the same log. It only moves up, with host answers (response.ts, a
// verify-timeout that applied its diffs in timeouts.ts), and each move is persisted with the session's
// next statement (session-writes.ts: a lost one is re-learned by catch-up, §7.3). A leaf.
import type { WriteBuffer } from './write-buffer.js';

/** host_sync_nonce per host address, and its persistence. */
export class HostProgress {
  readonly #synced: Map<string, bigint>;
  readonly #writes: WriteBuffer;

  /** `stored`: the progress the store held at open; `writes`: the session's buffer that persists moves. */
  constructor(stored: Iterable<readonly [string, bigint]>, writes: WriteBuffer) {
    this.#synced = new Map(stored);
    this.#writes = writes;
  }

  /** Highest nonce `address` is known to hold (0 before any). */
  of(address: string): bigint {
    return this.#synced.get(address) ?? 0n;
  }

  /**
   * host_sync_nonce[address] = max(current, nonce), persisted with the next statement of the session
   * (session-writes.ts: a lost one is re-learned by catch-up, §7.3).
   */
  advance(address: string, nonce: bigint): void {
    if (nonce <= this.of(address)) return;
    this.#synced.set(address, nonce);
    this.#writes.hostProgress(address, nonce);
  }
}
