// What the gateway freezes when it takes on an escrow (§5.2, §12 #2, #8): the chain row, the
// runtime version the session binds to, and the timeouts and nonce ceiling hosts will judge it by.
import type { DevshardEscrow, DevshardEscrowParams } from '@gonka-gateway/chain';
import { escrowRowFromChain } from '../state/escrow-row.js';
import type { SessionRecord } from './store.js';

/**
 * The escrow's max_nonce (§7.5): the row's frozen value (newer rows), else the chain params' (older
 * rows hold 0, and hosts judge them by the live param).
 */
export function escrowMaxNonce(
  row: Pick<DevshardEscrow, 'maxNonce'>,
  params: Pick<DevshardEscrowParams, 'maxNonce'>,
): bigint {
  return row.maxNonce || params.maxNonce;
}

/**
 * The session record of an escrow row; timeouts and max_nonce the row lacks (older rows: 0) come from
 * live params.
 */
export function sessionRecordFromChain(
  row: DevshardEscrow,
  params: Pick<DevshardEscrowParams, 'refusalTimeout' | 'executionTimeout' | 'maxNonce'>,
  version: string,
): SessionRecord {
  return {
    escrowId: row.id.toString(),
    escrow: escrowRowFromChain(row),
    tag: version,
    version,
    chainParams: {
      refusalTimeout: row.refusalTimeout || params.refusalTimeout,
      executionTimeout: row.executionTimeout || params.executionTimeout,
      maxNonce: escrowMaxNonce(row, params),
    },
  };
}
