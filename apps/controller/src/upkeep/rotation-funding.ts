// The funding rule of spec §3.4: each epoch transition locks another `amount` per created escrow
// until settlement returns the unused part, so a creator needs at least (temp_count + target_count)
// × amount per model it rotates, plus the gas of those creates (settlement is fee-exempt for an
// allowlisted settler, chain-and-network.md §2.3). Models sharing a creator key add up.
import {
  computeTxFee,
  MSG_CREATE_DEVSHARD_ESCROW,
  privateKeyFromEnv,
  queryInferenceParams,
  querySpendableBalance,
} from '@gonka-gateway/chain';
import type { ControllerContext } from '../controller-context.js';
import type { RotationModelSettings } from './rotation-settings.js';

export interface CreatorFunding {
  creator: string;
  privateKeyEnv: string;
  models: string[];
  spendable: bigint;
  /** Deposits of one transition plus the create fees. */
  required: bigint;
  ok: boolean;
}

export async function checkFunding(
  ctx: ControllerContext,
  models: readonly RotationModelSettings[],
): Promise<CreatorFunding[]> {
  if (models.length === 0) return [];
  const params = await queryInferenceParams(ctx.chain);
  const createFee = computeTxFee({
    typeUrls: [MSG_CREATE_DEVSHARD_ESCROW],
    feeParams: params.fee,
    gasLimit: ctx.gasLimit,
  }).amount;
  const byCreator = new Map<string, Omit<CreatorFunding, 'spendable' | 'ok'>>();
  for (const m of models) {
    const creator = privateKeyFromEnv(ctx.env, m.privateKeyEnv).address;
    const escrows = BigInt(m.tempCount + m.targetCount);
    const entry = byCreator.get(creator) ?? {
      creator,
      privateKeyEnv: m.privateKeyEnv,
      models: [],
      required: 0n,
    };
    entry.models.push(m.modelId);
    entry.required += escrows * (m.amount + createFee);
    byCreator.set(creator, entry);
  }
  return Promise.all(
    [...byCreator.values()].map(async (e) => {
      const spendable = await querySpendableBalance(ctx.chain, e.creator);
      return { ...e, spendable, ok: spendable >= e.required };
    }),
  );
}
