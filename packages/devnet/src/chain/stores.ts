// Chain state: the committed stores (plain Maps), and StateTx, the branch a tx executes on.
// Records are immutable values: a handler replaces a record, it never mutates one, so an
// uncommitted branch cannot leak into the committed state.
import { KvOverlay, type KvStore } from './kv-overlay.js';

export interface AccountRecord {
  readonly address: string;
  readonly accountNumber: bigint;
  readonly sequence: bigint;
  /** 33-byte compressed key; null until the account signs its first tx (§5). */
  readonly pubKey: Uint8Array | null;
  /** Module accounts print as ModuleAccount and may not receive MsgSend. */
  readonly moduleName?: string;
}

/** One DevshardEscrow row (§3.1), with the values frozen at creation (§2.6 create rule 7). */
export interface EscrowRow {
  readonly id: bigint;
  readonly creator: string;
  readonly amount: bigint;
  readonly slots: readonly string[];
  readonly epochIndex: bigint;
  /** Hex of the block app hash the slots were drawn from. */
  readonly appHash: string;
  readonly settled: boolean;
  readonly tokenPrice: bigint;
  readonly modelId: string;
  readonly createDevshardFee: bigint;
  readonly feePerNonce: bigint;
  readonly validationRate: number;
  readonly voteThresholdFactor: number;
  readonly inferenceSealGraceNonces: number;
  readonly inferenceSealGraceSeconds: number;
  readonly autoSealEveryNNonces: number;
  readonly maxNonce: number;
  readonly refusalTimeout: bigint;
  readonly executionTimeout: bigint;
}

export type MetaKey = 'escrowCounter' | 'nextAccountNumber';

/** The stores a tx reads and writes. */
export interface ChainStores {
  readonly accounts: KvStore<string, AccountRecord>;
  readonly balances: KvStore<string, bigint>;
  readonly escrows: KvStore<bigint, EscrowRow>;
  readonly escrowsPerEpoch: KvStore<bigint, number>;
  readonly meta: KvStore<MetaKey, bigint>;
  /** Participant coin balances credited by settlement in the current epoch ("epoch balance"). */
  readonly epochBalances: KvStore<string, bigint>;
  /** Unordered-tx nonces: `${signer}/${timeoutNs}` → timeout (ns), pruned once passed. */
  readonly unorderedNonces: KvStore<string, bigint>;
}

export class CommittedStores implements ChainStores {
  readonly accounts = new Map<string, AccountRecord>();
  readonly balances = new Map<string, bigint>();
  readonly escrows = new Map<bigint, EscrowRow>();
  readonly escrowsPerEpoch = new Map<bigint, number>();
  readonly meta = new Map<MetaKey, bigint>([
    ['escrowCounter', 0n],
    ['nextAccountNumber', 0n],
  ]);
  readonly epochBalances = new Map<string, bigint>();
  readonly unorderedNonces = new Map<string, bigint>();

  /** Drops unordered nonces whose timeout has passed: such a tx can no longer land anyway. */
  pruneUnorderedNonces(blockTimeNs: bigint): void {
    for (const [key, timeout] of this.unorderedNonces) {
      if (timeout < blockTimeNs) this.unorderedNonces.delete(key);
    }
  }
}

/** A branch of another ChainStores; commit() writes it into its parent. */
export class StateTx implements ChainStores {
  readonly accounts: KvOverlay<string, AccountRecord>;
  readonly balances: KvOverlay<string, bigint>;
  readonly escrows: KvOverlay<bigint, EscrowRow>;
  readonly escrowsPerEpoch: KvOverlay<bigint, number>;
  readonly meta: KvOverlay<MetaKey, bigint>;
  readonly epochBalances: KvOverlay<string, bigint>;
  readonly unorderedNonces: KvOverlay<string, bigint>;

  constructor(parent: ChainStores) {
    this.accounts = new KvOverlay(parent.accounts);
    this.balances = new KvOverlay(parent.balances);
    this.escrows = new KvOverlay(parent.escrows);
    this.escrowsPerEpoch = new KvOverlay(parent.escrowsPerEpoch);
    this.meta = new KvOverlay(parent.meta);
    this.epochBalances = new KvOverlay(parent.epochBalances);
    this.unorderedNonces = new KvOverlay(parent.unorderedNonces);
  }

  branch(): StateTx {
    return new StateTx(this);
  }

  commit(): void {
    this.accounts.commit();
    this.balances.commit();
    this.escrows.commit();
    this.escrowsPerEpoch.commit();
    this.meta.commit();
    this.epochBalances.commit();
    this.unorderedNonces.commit();
  }
}
