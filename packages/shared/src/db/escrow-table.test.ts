import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import * as escrowTable from './escrow-table.js';

// Escrow ids are a uint64 chain counter: one past 2^53 proves no Number() rounding on the way.
const BIG = 9_007_199_254_740_993n;

const escrow = (escrowId: bigint, extra: Partial<escrowTable.NewEscrow> = {}): escrowTable.NewEscrow => ({
  escrowId,
  chainId: 'gonka-devnet',
  modelId: 'model-a',
  creator: 'gonka1creator',
  amount: 18_446_744_073_709_551_615n,
  epochIndex: 7n,
  version: 'v5',
  state: 'active',
  active: true,
  chainRow: { token_price: '12', execution_timeout: '60' },
  signerKeyEnv: null,
  signerKeyEncrypted: null,
  ...extra,
});

describe('escrow table (spec §2.1, §3.1)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('keeps uint64 ids and amounts exact, and the first registration stands', async () => {
    const { sql } = database;
    expect(
      await escrowTable.insertEscrow(sql, escrow(BIG, { signerKeyEncrypted: new Uint8Array([1, 2, 3]) })),
    ).toBe(true);
    expect(await escrowTable.insertEscrow(sql, escrow(BIG, { modelId: 'other' }))).toBe(false);
    const found = await escrowTable.findEscrow(sql, BIG);
    expect(found).toMatchObject({
      escrowId: BIG,
      modelId: 'model-a',
      amount: 18_446_744_073_709_551_615n,
      epochIndex: 7n,
      hasEncryptedKey: true,
      role: 'manual',
    });
    expect(await escrowTable.creatorKeySourceOf(sql, BIG)).toEqual({
      signerKeyEnv: null,
      signerKeyEncrypted: new Uint8Array([1, 2, 3]),
    });
    expect(await escrowTable.findEscrow(sql, BIG + 1n)).toBeUndefined();
    expect(await escrowTable.listIds(sql)).toEqual([BIG]);
    expect(await escrowTable.listOpenPrices(sql)).toEqual([
      { escrowId: BIG, modelId: 'model-a', tokenPrice: '12' },
    ]);
    expect((await escrowTable.listUnsettled(sql))[0]).toMatchObject({
      escrowId: BIG,
      executionTimeout: '60',
    });
  });

  it('moves state only from the listed states, and the routing flag selects what serves', async () => {
    const { sql } = database;
    await escrowTable.insertEscrow(sql, escrow(20n));
    expect(await escrowTable.moveState(sql, 20n, ['draining'], 'finalizing')).toBe(false);
    expect(await escrowTable.moveState(sql, 20n, ['active'], 'draining')).toBe(true);
    expect((await escrowTable.findEscrow(sql, 20n))?.state).toBe('draining');
    expect((await escrowTable.listServing(sql)).map((e) => e.escrowId)).toEqual([BIG]);
    expect(await escrowTable.setActive(sql, BIG, false)).toBe(true);
    expect(await escrowTable.setActive(sql, 999n, false)).toBe(false);
    expect(await escrowTable.listServing(sql)).toEqual([]);
    await escrowTable.recordFault(sql, 20n, 'breaker');
    expect(await escrowTable.setLastError(sql, 20n, null)).toEqual({ modelId: 'model-a' });
    expect(await escrowTable.deleteEscrow(sql, 20n)).toBe(true);
    expect(await escrowTable.deleteEscrow(sql, 20n)).toBe(false);
  });

  it('tags only manual escrows and promotes the newest regular ones', async () => {
    const { sql } = database;
    for (const id of [31n, 32n, 33n]) await escrowTable.insertEscrow(sql, escrow(id, { modelId: 'model-r' }));
    expect(await escrowTable.tagManualRole(sql, 31n, 'regular')).toBe(true);
    expect(await escrowTable.tagManualRole(sql, 31n, 'temp')).toBe(false);
    expect(await escrowTable.tagManualRole(sql, 32n, 'regular')).toBe(true);
    expect(await escrowTable.tagManualRole(sql, 33n, 'regular')).toBe(true);
    // The newest two; RETURNING lists them in no particular order.
    expect(new Set(await escrowTable.promoteRegularToTemp(sql, 'model-r', 2, 7n))).toEqual(
      new Set([32n, 33n]),
    );
    expect(await escrowTable.listByRole(sql, 'model-r', 'regular')).toEqual([31n]);
    expect(await escrowTable.listRotatedBefore(sql, 'model-r', 8n)).toEqual([31n, 32n, 33n]);
    expect(await escrowTable.listRotatedBefore(sql, 'model-r', 7n)).toEqual([]);
  });
});
