// Rows of the escrows table for tests of claiming (the controller writes them in production).
import { escrowTable } from '@gonka-gateway/shared';
import type { Sql } from 'postgres';

export interface TestEscrowRow {
  readonly escrowId: bigint;
  readonly modelId: string;
  readonly state?: string;
  readonly active?: boolean;
  readonly creator?: string;
  readonly amount?: bigint;
  readonly epochIndex?: bigint;
  readonly version?: string;
  readonly signerKeyEnv?: string | null;
  /** escrows.signer_key_encrypted (sealSecret of the creator key), as the controller stores it. */
  readonly signerKeyEncrypted?: Uint8Array | null;
}

export async function insertEscrowRows(sql: Sql, rows: readonly TestEscrowRow[]): Promise<void> {
  for (const r of rows) {
    const inserted = await escrowTable.insertEscrow(sql, {
      escrowId: r.escrowId,
      chainId: 'gonka-devnet',
      modelId: r.modelId,
      creator: r.creator ?? 'gonka1test',
      amount: r.amount ?? 0n,
      epochIndex: r.epochIndex ?? 0n,
      version: r.version ?? 'v5',
      state: r.state ?? 'active',
      active: r.active ?? true,
      chainRow: {},
      signerKeyEnv: r.signerKeyEnv ?? null,
      signerKeyEncrypted: r.signerKeyEncrypted ?? null,
    });
    if (!inserted) throw new Error(`escrow ${r.escrowId} is already in the escrows table`);
  }
}

/** The controller's first step of finalize (architecture §2.6): the owner hands the escrow back. */
export async function setEscrowState(sql: Sql, escrowId: bigint, state: string): Promise<void> {
  await escrowTable.setState(sql, escrowId, state);
}
