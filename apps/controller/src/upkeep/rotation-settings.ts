// The escrow_rotation settings (spec §2.5) as the upkeep jobs read them: straight from the settings
// row on every pass, so a change through POST /v1/admin/settings applies on the next tick without a
// restart. Amounts stay decimal strings in the row and become bigint here.
import type { Sql } from 'postgres';

export interface RotationModelSettings {
  modelId: string;
  tempCount: number;
  targetCount: number;
  amount: bigint;
  privateKeyEnv: string;
  /** Per-model settlement switch: false = rotated-out escrows are drained and finalized, not settled. */
  settle: boolean;
}

export interface RotationSettings {
  enabled: boolean;
  prePocBlocks: bigint;
  models: RotationModelSettings[];
}

/** One model of settings.escrow_rotation as the row stores it (and the admin API shows it). */
export interface StoredRotationModel {
  model_id: string;
  temp_count: number;
  target_count: number;
  amount: string | number;
  private_key_env: string;
  /** The per-model switch for rotation settlement: false = rotated-out escrows are only finalized. */
  settle?: boolean;
}

export interface StoredRotation {
  enabled: boolean;
  pre_poc_blocks: number;
  models: StoredRotationModel[];
}

/** settings.escrow_rotation as stored, or undefined before the settings row exists. */
export async function readStoredRotation(sql: Sql): Promise<StoredRotation | undefined> {
  const [row] = await sql<{ escrow_rotation: StoredRotation }[]>`
    select escrow_rotation from settings where id = 1`;
  return row?.escrow_rotation;
}

export async function readRotationSettings(sql: Sql): Promise<RotationSettings | undefined> {
  const stored = await readStoredRotation(sql);
  return stored && rotationSettingsOf(stored);
}

export function rotationSettingsOf(r: StoredRotation): RotationSettings {
  return {
    enabled: r.enabled,
    prePocBlocks: BigInt(r.pre_poc_blocks),
    models: r.models.map((m) => ({
      modelId: m.model_id,
      tempCount: m.temp_count,
      targetCount: m.target_count,
      amount: BigInt(m.amount),
      privateKeyEnv: m.private_key_env,
      settle: m.settle ?? true,
    })),
  };
}
