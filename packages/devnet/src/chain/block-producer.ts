// Blocks, block time and the mempool. A broadcast runs CheckTx against the check state (committed
// state plus the ante writes of txs already accepted, as in the SDK); an accepted tx waits in the
// mempool and is executed for real (re-checked) when the next block is produced, either by the
// timer or by an explicit step. Block time follows the wall clock plus an offset tests can advance,
// so time moves forward without sleeping.
import { concat, sha256, txHash } from '@gonka-gateway/chain';
import { u64be } from '@gonka-gateway/devshard';
import { bytesToHex, nowNs } from '../encoding.js';
import { effectiveEpochAt } from '../node/epoch-schedule.js';
import { type DecodedTx, decodeTx } from './decode-tx.js';
import { SdkErrors, TxError } from './errors.js';
import type { TxResult } from './events.js';
import type { ExecEnv, TxMode } from './exec-env.js';
import type { ChainState } from './state.js';
import { StateTx } from './stores.js';
import { runTx } from './tx-pipeline.js';

export interface BlockInfo {
  height: bigint;
  timeNs: bigint;
  appHash: Uint8Array;
  blockHash: Uint8Array;
  txHashes: string[];
}

export interface BroadcastOutcome {
  hash: string;
  result: TxResult;
}

interface PendingTx {
  tx: DecodedTx;
  index: boolean;
}

const NS_PER_MS = 1_000_000n;
const MIN_BLOCK_TIME_STEP_NS = 1_000n;

export class BlockProducer {
  #latest: BlockInfo;
  readonly #genesis: BlockInfo;
  #offsetNs = 0n;
  #mempool: PendingTx[] = [];
  readonly #mempoolHashes = new Set<string>();
  /** Every hash that reached a block, indexed or not (CometBFT's cache rejects re-broadcasts). */
  readonly #committedHashes = new Set<string>();
  #checkState: StateTx;
  #timer: NodeJS.Timeout | null = null;
  readonly #listeners = new Set<(block: BlockInfo) => void>();

  constructor(
    readonly chain: ChainState,
    genesisTimeNs: bigint,
  ) {
    const appHash = sha256(new TextEncoder().encode(`gonka devnet genesis ${chain.chainId}`));
    this.#genesis = this.#latest = {
      height: 1n,
      timeNs: genesisTimeNs,
      appHash,
      blockHash: sha256(concat([appHash, u64be(1n)])),
      txHashes: [],
    };
    this.#checkState = new StateTx(chain.committed);
  }

  get latest(): BlockInfo {
    return this.#latest;
  }

  get genesis(): BlockInfo {
    return this.#genesis;
  }

  /**
   * The devnet clock now (ns): the wall clock plus the offset `advanceTime` added, never behind the
   * latest block. Block production uses the same sum, so devshard hosts (confirmed_at, timeout
   * deadlines) and blocks agree on time, and a test moves both with one `advanceTime`.
   */
  clockNs(): bigint {
    const t = nowNs() + this.#offsetNs;
    if (t < this.#latest.timeNs) return this.#latest.timeNs;
    return t;
  }

  get mempoolSize(): number {
    return this.#mempool.length;
  }

  #env(mode: TxMode, height: bigint, timeNs: bigint): ExecEnv {
    const params = this.chain.effectiveParams();
    return {
      chain: this.chain,
      params,
      mode,
      height,
      timeNs,
      appHashHex: bytesToHex(this.#latest.appHash),
      epochIndex: effectiveEpochAt(params.epoch, height),
    };
  }

  /** CheckTx. `include: false` accepts the tx but drops it from the mempool (a fault). */
  broadcast(txBytes: Uint8Array, opts: { include: boolean; index: boolean }): BroadcastOutcome {
    const hash = txHash(txBytes);
    if (this.#mempoolHashes.has(hash) || this.#committedHashes.has(hash)) {
      return { hash, result: rejected(SdkErrors.txInMempoolCache(''), 0n) };
    }
    let tx: DecodedTx;
    try {
      tx = decodeTx(txBytes);
    } catch (err) {
      return { hash, result: rejected(err, 0n) };
    }
    const run = runTx(
      this.#checkState,
      tx,
      this.#env('check', this.#latest.height + 1n, this.#latest.timeNs),
    );
    if (run.result.code !== 0 || !run.ante) return { hash, result: run.result };
    run.ante.commit(); // message writes are discarded: CheckTx never changes committed state
    if (opts.include) {
      this.#mempool.push({ tx, index: opts.index });
      this.#mempoolHashes.add(hash);
    } else {
      this.chain.verifiedSignatures.delete(hash); // dropped: it will never be delivered
    }
    return { hash, result: { ...run.result, events: [] } };
  }

  /** POST /cosmos/tx/v1beta1/simulate: no signature or fee-price check, nothing kept. */
  simulate(txBytes: Uint8Array): TxResult {
    let tx: DecodedTx;
    try {
      tx = decodeTx(txBytes);
    } catch (err) {
      return rejected(err, 0n);
    }
    return runTx(this.#checkState, tx, this.#env('simulate', this.#latest.height + 1n, this.#latest.timeNs))
      .result;
  }

  /**
   * Block time is the wall clock plus the advanced offset, strictly increasing (by at least 1 µs,
   * so many quick steps do not run the chain clock ahead of the wall clock), and at least `minTimeNs`.
   */
  produceBlock(minTimeNs = 0n): BlockInfo {
    const prev = this.#latest;
    const height = prev.height + 1n;
    let timeNs = nowNs() + this.#offsetNs;
    if (timeNs < prev.timeNs + MIN_BLOCK_TIME_STEP_NS) timeNs = prev.timeNs + MIN_BLOCK_TIME_STEP_NS;
    if (timeNs < minTimeNs) timeNs = minTimeNs;
    const env = this.#env('deliver', height, timeNs);
    const pending = this.#mempool;
    this.#mempool = [];
    this.#mempoolHashes.clear();

    const block = new StateTx(this.chain.committed);
    const results: Array<{ pending: PendingTx; result: TxResult }> = [];
    for (const p of pending) {
      const run = runTx(block, p.tx, env);
      if (run.ante) {
        run.messages?.commit();
        run.ante.commit();
      }
      results.push({ pending: p, result: run.result });
    }
    block.commit();
    this.chain.committed.pruneUnorderedNonces(timeNs);

    const txHashes = pending.map((p) => p.tx.hash);
    const appHash = sha256(
      concat([prev.appHash, u64be(height), ...txHashes.map((h) => new TextEncoder().encode(h))]),
    );
    this.#latest = { height, timeNs, appHash, blockHash: sha256(concat([appHash, u64be(height)])), txHashes };
    for (const { pending: p, result } of results) {
      this.#committedHashes.add(p.tx.hash);
      this.chain.verifiedSignatures.delete(p.tx.hash);
      if (p.index) this.chain.txIndex.set(p.tx.hash, { hash: p.tx.hash, height, timeNs, result, tx: p.tx });
    }
    this.#checkState = new StateTx(this.chain.committed);
    for (const listener of this.#listeners) listener(this.#latest);
    return this.#latest;
  }

  step(count = 1): BlockInfo {
    for (let i = 0; i < count; i++) this.produceBlock();
    return this.#latest;
  }

  /** Moves the block clock forward by `ms` (at least) and produces one block at the new time. */
  advanceTime(ms: number): BlockInfo {
    const delta = BigInt(Math.round(ms)) * NS_PER_MS;
    this.#offsetNs += delta;
    return this.produceBlock(this.#latest.timeNs + delta);
  }

  /** Timer-driven production; blocks are skipped while the `blocksPaused` fault is set. */
  startTimer(intervalMs: number): void {
    if (intervalMs <= 0 || this.#timer) return;
    this.#timer = setInterval(() => {
      if (!this.chain.faults.settings.blocksPaused) this.produceBlock();
    }, intervalMs);
    this.#timer.unref();
  }

  stopTimer(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  onBlock(listener: (block: BlockInfo) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function rejected(err: unknown, gasWanted: bigint): TxResult {
  if (!(err instanceof TxError)) throw err;
  return {
    code: err.code,
    codespace: err.codespace,
    rawLog: err.message,
    events: [],
    gasWanted,
    gasUsed: 0n,
  };
}
