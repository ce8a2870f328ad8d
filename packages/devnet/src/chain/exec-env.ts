// What a tx sees of the block it runs in. CheckTx runs against the latest committed block's time
// and app hash with height + 1; DeliverTx against the block being produced.
import type { DevnetParams } from './params.js';
import type { ChainState } from './state.js';

export type TxMode = 'check' | 'deliver' | 'simulate';

export interface ExecEnv {
  chain: ChainState;
  /** Effective params (faults applied) for this block. */
  params: DevnetParams;
  mode: TxMode;
  height: bigint;
  timeNs: bigint;
  /** Hex app hash of the previous block (the header's app_hash the keeper reads). */
  appHashHex: string;
  /** Effective epoch index at this height. */
  epochIndex: bigint;
}
