// The escrow_rotation settings (spec §2.5) as the upkeep jobs read them: straight from the settings
// row on every pass, so a change through POST /v1/admin/settings applies on the next tick without a
// restart. Amounts stay decimal strings in the row and become bigint here.
import type { Sql } from 'postgres';
import type { StoredRotation } from '../admin-api.js';

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
