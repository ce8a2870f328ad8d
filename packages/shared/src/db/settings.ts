import { eq } from 'drizzle-orm';
import type { GatewayConfig } from '../config/load-config.js';
import type { GatewayDb } from './client.js';
import { settings } from './schema.js';

export const DEFAULT_ESCROW_ROTATION = { enabled: false, pre_poc_blocks: 300, models: [] } as const;

/**
 * Writes the settings row from the environment only when it does not exist yet (spec §2.6): after
 * the first start, only POST /v1/admin/settings changes settings. Returns whether it wrote.
 */
export async function bootstrapSettings(db: GatewayDb, config: GatewayConfig): Promise<boolean> {
  const b = config.bootstrapSettings;
  const inserted = await db
    .insert(settings)
    .values({
      id: 1,
      defaultRequestMaxTokens: b.defaultRequestMaxTokens,
      requestMaxTokensCap: b.requestMaxTokensCap,
      modelLimits: [],
      escrowRotation: DEFAULT_ESCROW_ROTATION,
      disabled: { enabled: b.disabled.enabled, message: b.disabled.message, new_url: b.disabled.newUrl },
    })
    .onConflictDoNothing({ target: settings.id })
    .returning({ id: settings.id });
  return inserted.length === 1;
}

export async function readSettings(db: GatewayDb) {
  const [row] = await db.select().from(settings).where(eq(settings.id, 1));
  return row;
}
