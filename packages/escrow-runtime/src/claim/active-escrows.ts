// The escrows a replica may own (architecture §2.2, §3): state `active` and the local `active` flag
// set (spec §2.1). Anything else (draining, finalizing, deactivated…) is never claimed, and an owner
// hands such an escrow back (drain) on its next claim pass. A faulted session (a breaker tripped)
// clears the `active` flag with its cause in last_error, so it stays unclaimed even when Redis loses
// the pool's `faulted` status; an operator re-activates it after looking.
import { escrowTable } from '@gonka-gateway/shared';
import type { Sql } from 'postgres';

export interface ActiveEscrow {
  readonly escrowId: bigint;
  readonly modelId: string;
  /** The devshard runtime the escrow is bound to (escrows.version, devshard-protocol.md §1). */
  readonly version: string;
  /** Name of the env variable holding the creator key (escrows.signer_key_env), if set. */
  readonly signerKeyEnv: string | null;
  /** The creator key is stored encrypted instead (escrows.signer_key_encrypted). */
  readonly hasEncryptedKey: boolean;
  /**
   * That encrypted key (iv ‖ tag ‖ ciphertext under GATEWAY_ENCRYPTION_KEY, sealed by the controller),
   * or null. Opened only by the creator-key resolver (owned/creator-key.ts); never log an ActiveEscrow whole.
   */
  readonly signerKeyEncrypted: Uint8Array | null;
}

export async function readActiveEscrows(sql: Sql): Promise<ActiveEscrow[]> {
  return (await escrowTable.listServing(sql)).map((e) => ({
    escrowId: e.escrowId,
    modelId: e.modelId,
    version: e.version,
    signerKeyEnv: e.signerKeyEnv,
    hasEncryptedKey: e.signerKeyEncrypted !== null,
    signerKeyEncrypted: e.signerKeyEncrypted,
  }));
}

/**
 * Takes a faulted escrow out of claiming for good: `active` = false (the local flag of spec §2.1,
 * which readActiveEscrows honours) and the cause in last_error. The lifecycle `state` is left alone,
 * so the controller can still finalize it.
 */
export async function recordEscrowFault(sql: Sql, escrowId: bigint, lastError: string): Promise<void> {
  await escrowTable.recordFault(sql, escrowId, lastError);
}
