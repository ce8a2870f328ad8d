// What the gateway freezes when it takes on an escrow (§5.2, §12 #2, #8): the chain row, the
// runtime version the session binds to, and the timeouts hosts will judge it by.
import type { DevshardEscrow, DevshardEscrowParams } from '@gonka-gateway/chain';
import { escrowRowFromChain } from '../state/escrow-row.js';
import type { SessionRecord } from './store.js';

/** Profiles this implementation speaks, best first (§11). */
const SUPPORTED = [/^v5(\.|$)/, /^v4(\.|$)/, /^v3(\.|$)/];

/**
 * The runtime to bind new escrows to: the best approved name this implementation supports (§12 #2);
 * `v5` when the chain approves no list (an empty list means any version is accepted).
 */
export function runtimeVersionFor(approved: readonly { name: string }[]): string | undefined {
  if (approved.length === 0) return 'v5';
  for (const pattern of SUPPORTED) {
    const match = approved
      .map((v) => v.name)
      .filter((name) => pattern.test(name))
      .sort()
      .at(-1);
    if (match) return match;
  }
  return undefined;
}

/** The session record of an escrow row; timeouts the row lacks (older rows: 0) come from live params. */
export function sessionRecordFromChain(
  row: DevshardEscrow,
  params: Pick<DevshardEscrowParams, 'refusalTimeout' | 'executionTimeout'>,
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
    },
  };
}
