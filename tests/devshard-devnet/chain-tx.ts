// Chain transactions of the tests: broadcast, wait for inclusion, fail loudly otherwise.
import { broadcastAndWait, type ChainClient, type PreparedTx, type TxIncluded } from '@gonka-gateway/chain';

/** Waits that end as soon as the tx is indexed; the timeout only bounds a broken run. */
export const UNTIL_INCLUDED = { intervalMs: 20, timeoutMs: 20_000 } as const;

export async function broadcastIncluded(client: ChainClient, tx: PreparedTx): Promise<TxIncluded> {
  const outcome = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
  if (outcome.status !== 'included') {
    const text = JSON.stringify(outcome, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
    throw new Error(`tx ${tx.typeUrls.join(',')} not included: ${text}`);
  }
  return outcome;
}
