// Runtime fault switches (packages/devnet/README.md, "Faults"). Each devnet owns one Faults object;
// tests flip it through the embedding API and the demo through POST /devnet/admin/faults. Every
// field is plain JSON so the admin route can take it as is.
import type { HostFault, HostFaultMode, HostFaults } from './host/faults.js';

/** Makes matching queries slow and/or fail. */
export interface QueryFault {
  /** HTTP status to answer with (e.g. 500, 503); omitted = answer normally after the delay. */
  status?: number;
  delayMs?: number;
  /** Only paths containing this text; omitted = every query of the target. */
  match?: string;
  /** How many requests to affect before the fault clears itself; omitted = until cleared. */
  remaining?: number;
}

/**
 * - `never-included`: CheckTx passes and the hash is returned, but the tx is dropped from the
 *   mempool: it never executes and is never indexed.
 * - `never-indexed`: the tx executes in the next block, but `GET /cosmos/tx/v1beta1/txs/{hash}`
 *   answers 404 forever (a broken indexer).
 * - `drop-connection`: the tx is accepted (and executes in the next block), then the socket is
 *   destroyed without a response.
 * - `no-response`: the tx is accepted, and the response is never sent (the request hangs until the
 *   client gives up or the devnet closes).
 */
export type BroadcastFaultMode = 'never-included' | 'never-indexed' | 'drop-connection' | 'no-response';

export interface BroadcastFault {
  mode: BroadcastFaultMode;
  remaining?: number;
}

export interface FaultSettings {
  /** Chain REST queries (GET on :1317 and /chain-api). */
  chainQuery?: QueryFault;
  /** Node API queries (GET /v1, /v2 on the node). */
  nodeQuery?: QueryFault;
  broadcast?: BroadcastFault;
  /** Addresses whose spendable balance reads as 0 (as if fully locked). */
  insufficientFunds?: string[];
  /** Addresses taken off allowed_creator_addresses (as a governance change would). */
  removedCreators?: string[];
  /** The current epoch counts as having reached max_escrows_per_epoch. */
  epochCapReached?: boolean;
  /** Models absent from the current epoch group (no validation weights, not served). */
  modelsMissing?: string[];
  /** Participants listed as excluded; their settlement share goes to the governance module. */
  excludedParticipants?: string[];
  /** Block production paused (same as blocks.pause()). */
  blocksPaused?: boolean;
  /** Devshard host faults by host address (host/faults.ts); the whole map is replaced on set. */
  devshardHosts?: HostFaults;
}

export class Faults {
  #settings: FaultSettings = {};
  readonly #listeners = new Set<(settings: FaultSettings) => void>();

  /** Merges the given switches into the current ones (a key set to undefined/null clears it). */
  set(patch: FaultSettings): FaultSettings {
    const next: Record<string, unknown> = { ...this.#settings };
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined || value === null) delete next[key];
      else next[key] = value;
    }
    this.#settings = structuredClone(next) as FaultSettings;
    for (const listener of this.#listeners) listener(this.#settings);
    return this.current();
  }

  clear(): void {
    this.#settings = {};
    for (const listener of this.#listeners) listener(this.#settings);
  }

  current(): FaultSettings {
    return structuredClone(this.#settings);
  }

  onChange(listener: (settings: FaultSettings) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Read access for the chain and node code (no copy; callers must not mutate). */
  get settings(): Readonly<FaultSettings> {
    return this.#settings;
  }

  /** The query fault that applies to `path`, consuming one of its `remaining` uses. */
  takeQueryFault(target: 'chainQuery' | 'nodeQuery', path: string): QueryFault | null {
    const fault = this.#settings[target];
    if (!fault || (fault.match !== undefined && !path.includes(fault.match))) return null;
    this.#consume(target, fault);
    return fault;
  }

  takeBroadcastFault(): BroadcastFault | null {
    const fault = this.#settings.broadcast;
    if (!fault) return null;
    this.#consume('broadcast', fault);
    return fault;
  }

  /** The host's devshard fault when its mode is one of `modes`, consuming one of its `remaining` uses. */
  takeHostFault(address: string, modes: readonly HostFaultMode[]): HostFault | null {
    const fault = this.#settings.devshardHosts?.[address];
    if (!fault || !modes.includes(fault.mode)) return null;
    if (fault.remaining !== undefined) {
      const hosts = { ...this.#settings.devshardHosts };
      if (fault.remaining <= 1) delete hosts[address];
      else hosts[address] = { ...fault, remaining: fault.remaining - 1 };
      this.#settings = { ...this.#settings, devshardHosts: hosts };
    }
    return fault;
  }

  /** The host's devshard fault, not consumed (e.g. to see whether it should be down). */
  hostFault(address: string): Readonly<HostFault> | undefined {
    return this.#settings.devshardHosts?.[address];
  }

  #consume(key: 'chainQuery' | 'nodeQuery' | 'broadcast', fault: { remaining?: number }): void {
    if (fault.remaining === undefined) return;
    if (fault.remaining <= 1) delete this.#settings[key];
    else this.#settings = { ...this.#settings, [key]: { ...fault, remaining: fault.remaining - 1 } };
  }

  isSpendableZero(address: string): boolean {
    return this.#settings.insufficientFunds?.includes(address) ?? false;
  }

  isModelMissing(modelId: string): boolean {
    return this.#settings.modelsMissing?.includes(modelId) ?? false;
  }

  isExcluded(address: string): boolean {
    return this.#settings.excludedParticipants?.includes(address) ?? false;
  }
}
