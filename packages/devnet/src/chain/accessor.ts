// The typed read (and a little write) access tests get to the devnet chain: balances to the last
// ngonka, epoch balances, accounts, escrow rows, indexed txs, params.
import type { Faults } from '../faults.js';
import { effectiveEpochAt } from '../node/epoch-schedule.js';
import { balanceOf, type ModuleName, mint, moduleAddress, spendableOf } from './bank.js';
import type { BlockProducer } from './block-producer.js';
import type { DevnetParams } from './params.js';
import type { ChainState, IndexedTx } from './state.js';
import type { AccountRecord, EscrowRow } from './stores.js';

export interface DevnetChain {
  /** Effective params (faults applied), a copy. */
  params(): DevnetParams;
  /** Changes params from the next query/tx on, like a governance proposal would. */
  updateParams(mutate: (params: DevnetParams) => void): void;
  /** Bank balance in ngonka. */
  balanceOf(address: string): bigint;
  /** Bank balance minus what the insufficientFunds fault locks. */
  spendableOf(address: string): bigint;
  /** Settlement credits of the current epoch (participant coin_balance); not in the bank balance. */
  epochBalanceOf(address: string): bigint;
  account(address: string): AccountRecord | undefined;
  escrow(id: bigint | number): EscrowRow | undefined;
  /** Highest escrow id created so far (0 = none). */
  lastEscrowId(): bigint;
  tx(hash: string): IndexedTx | undefined;
  moduleAddress(name: ModuleName): string;
  /** Mints coins to an address (creates the account); a test faucet. */
  fund(address: string, amount: bigint): void;
  /** Grants `grantee` a MsgStartInference authz grant from `granter` (a warm key). */
  grantWarmKey(granter: string, grantee: string): void;
  /** Effective epoch index at the latest height. */
  epoch(): bigint;
}

export function createChainAccessor(chain: ChainState, blocks: BlockProducer, faults: Faults): DevnetChain {
  const state = chain.committed;
  return {
    params: () => structuredClone(chain.effectiveParams()),
    updateParams: (mutate) => {
      const next = structuredClone(chain.params);
      mutate(next);
      chain.params = next;
    },
    balanceOf: (address) => balanceOf(state, address),
    spendableOf: (address) => spendableOf(state, faults, address),
    epochBalanceOf: (address) => state.epochBalances.get(address) ?? 0n,
    account: (address) => state.accounts.get(address),
    escrow: (id) => state.escrows.get(BigInt(id)),
    lastEscrowId: () => state.meta.get('escrowCounter') ?? 0n,
    tx: (hash) => chain.txIndex.get(hash.toUpperCase()),
    moduleAddress,
    fund: (address, amount) => mint(state, address, amount),
    grantWarmKey: (granter, grantee) => chain.grantWarmKey(granter, grantee),
    epoch: () => effectiveEpochAt(chain.effectiveParams().epoch, blocks.latest.height),
  };
}
