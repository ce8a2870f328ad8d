// Rows of the escrows table for tests of claiming (the controller writes them in production).
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
    await sql`insert into escrows (escrow_id, chain_id, model_id, creator, amount, epoch_index, version,
                                   state, active, chain_row, signer_key_env,
                                   signer_key_encrypted)
              values (${r.escrowId.toString()}, 'gonka-devnet', ${r.modelId}, ${r.creator ?? 'gonka1test'},
                      ${(r.amount ?? 0n).toString()}, ${(r.epochIndex ?? 0n).toString()}, ${r.version ?? 'v5'},
                      ${r.state ?? 'active'}, ${r.active ?? true}, '{}'::jsonb, ${r.signerKeyEnv ?? null},
                      ${r.signerKeyEncrypted ? Buffer.from(r.signerKeyEncrypted) : null})`;
  }
}

/** The controller's first step of finalize (architecture §2.6): the owner hands the escrow back. */
export async function setEscrowState(sql: Sql, escrowId: bigint, state: string): Promise<void> {
  await sql`update escrows set state = ${state}, updated_at = now() where escrow_id = ${escrowId.toString()}`;
}
