import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { schema } from '../index.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { bootstrapSettings, readSettings } from './settings.js';

const ADMIN = `sk-admin-${'ab'.repeat(24)}`;

describe('settings bootstrap (spec §2.6)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('writes the environment values on the first start only', async () => {
    const first = loadConfig({
      DEVSHARD_ADMIN_API_KEY: ADMIN,
      DEVSHARDS_JSON: '[]',
      DEVSHARD_GATEWAY_DISABLED: 'on',
      DEVSHARD_GATEWAY_DISABLED_MESSAGE: 'moved to the new gateway',
      DEVSHARD_GATEWAY_DISABLED_NEW_URL: 'https://new.example',
      GATEWAY_DEFAULT_MAX_TOKENS: '1000',
      GATEWAY_MAX_TOKENS_CAP: '2000',
    });
    expect(await bootstrapSettings(database.db, first)).toBe(true);
    const row = await readSettings(database.db);
    expect(row).toMatchObject({
      defaultRequestMaxTokens: 1000,
      requestMaxTokensCap: 2000,
      disabled: { enabled: true, message: 'moved to the new gateway', new_url: 'https://new.example' },
      escrowRotation: { enabled: false, pre_poc_blocks: 300, models: [] },
      modelLimits: [],
    });

    // The operator changes settings through the admin API (simulated), then restarts with other env.
    await database.db
      .update(schema.settings)
      .set({ disabled: { enabled: false, message: '', new_url: null } })
      .where(eq(schema.settings.id, 1));
    const second = loadConfig({
      DEVSHARD_ADMIN_API_KEY: ADMIN,
      DEVSHARDS_JSON: '[]',
      GATEWAY_DEFAULT_MAX_TOKENS: '5',
    });
    expect(await bootstrapSettings(database.db, second)).toBe(false);
    const after = await readSettings(database.db);
    expect(after?.defaultRequestMaxTokens).toBe(1000);
    expect(after?.disabled).toEqual({ enabled: false, message: '', new_url: null });
  });
});
