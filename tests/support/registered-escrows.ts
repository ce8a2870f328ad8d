// Escrows made on the in-process devnet and registered the way the controller leaves them after
// create (architecture §3): the session row in the store, the escrow row `active` — shared by the
// ownership and proxy end-to-end stacks.
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import type { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { insertEscrowRows } from '@gonka-gateway/escrow-runtime/testing';
import type { Gateway, TestEscrow } from '../devshard-devnet/harness.js';

/**
 * `count` escrows (5 GNK, Qwen) created on the devnet chain, one after another, registered active;
 * escrow i at `tokenPrices[i]` when given (the chain's token_price while it is created, frozen in
 * its row), the chain's price otherwise.
 */
export async function createRegisteredEscrows(
  gateway: Gateway,
  store: PostgresSessionStore,
  sql: Parameters<typeof insertEscrowRows>[0],
  count: number,
  tokenPrices: readonly bigint[] = [],
): Promise<TestEscrow[]> {
  const escrows: TestEscrow[] = [];
  const chainPrice = gateway.params.devshardEscrow.tokenPrice;
  const priceAt = (price: bigint) =>
    gateway.devnet.chain.updateParams((p) => {
      p.devshardEscrow.tokenPrice = price;
    });
  for (let i = 0; i < count; i++) {
    const price = tokenPrices[i];
    if (price !== undefined) priceAt(price);
    const escrow = await gateway
      .escrow(() => true, 'any group')
      .finally(() => {
        if (price !== undefined) priceAt(chainPrice);
      });
    await store.create(escrow.record);
    await insertEscrowRows(sql, [
      {
        escrowId: escrow.id,
        modelId: QWEN_MODEL,
        creator: escrow.row.creator,
        amount: escrow.row.amount,
        epochIndex: escrow.row.epochIndex,
        version: escrow.record.version,
      },
    ]);
    escrows.push(escrow);
  }
  return escrows;
}
