// A SessionRecord for runtime tests that never talk to a host: two slots on one host key, v5, a
// 1 GNK escrow of `creator` (the session is opened and owned, never served).
import type { SessionRecord } from '@gonka-gateway/devshard/session';

export function twoSlotSessionRecord(
  escrowId: bigint,
  creator: { readonly address: string },
  host: { readonly address: string },
): SessionRecord {
  return {
    escrowId: escrowId.toString(),
    escrow: {
      escrowId,
      creator: creator.address,
      amount: 1_000_000_000n,
      slots: [host.address, host.address],
    },
    tag: 'v5',
    version: 'v5',
    chainParams: {},
  };
}
