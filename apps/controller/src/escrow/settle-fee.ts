// Can the settler pay the settle tx fee? (chain-and-network.md §2.3.) Asked before anything is
// finalized — by the settle routes (402, or the batch line `insufficient_funds`) and again by the
// settle job — so a settler that cannot pay hears it while the escrow still serves, instead of after
// a drain and a finalize whose tx the chain then refuses. The fee is exactly what the tx builder
// offers for MsgSettleDevshardEscrow (computeTxFee: the controller's gas limit, the live fee params,
// the default price floor, as ControllerContext.signerFor signs): nothing while settlement is exempt,
// gas × the listing group's price once an enabled fee group lists it. It is compared with the
// spendable balance, the part a fee is deducted from.
import { computeTxFee, MSG_SETTLE_DEVSHARD_ESCROW, querySpendableBalance } from '@gonka-gateway/chain';
import { inferenceParamsOrLastKnown } from '../chain/last-known.js';
import type { ControllerContext } from '../controller-context.js';

/** What the settler lacks, in ngonka. */
export interface SettleFeeShortfall {
  address: string;
  required: bigint;
  balance: bigint;
  shortfall: bigint;
}

/**
 * The settle tx fee (ngonka) under the chain's fee params, or their last known copy while the node
 * cannot answer (fee params change only by governance).
 */
export async function settleTxFee(ctx: ControllerContext): Promise<bigint> {
  const params = await inferenceParamsOrLastKnown(ctx);
  return computeTxFee({
    typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW],
    feeParams: params.fee,
    gasLimit: ctx.gasLimit,
  }).amount;
}

/**
 * Fees a run of settles signed by one address may still spend: read once, then each settle takes
 * its fee from it (a batch's settles pay one after the other from one balance).
 */
export class SettleFeeBudget {
  #spent = 0n;
  private constructor(
    readonly address: string,
    readonly fee: bigint,
    readonly balance: bigint,
  ) {}

  static async read(ctx: ControllerContext, address: string): Promise<SettleFeeBudget> {
    const fee = await settleTxFee(ctx);
    // An exempt settle needs no balance at all: no query.
    const balance = fee === 0n ? 0n : await querySpendableBalance(ctx.chain, address);
    return new SettleFeeBudget(address, fee, balance);
  }

  /** Takes one settle's fee; the shortfall (nothing taken) when what is left cannot pay it. */
  take(): SettleFeeShortfall | undefined {
    const left = this.balance - this.#spent;
    if (left >= this.fee) {
      this.#spent += this.fee;
      return undefined;
    }
    return { address: this.address, required: this.fee, balance: left, shortfall: this.fee - left };
  }
}

/** The shortfall of one settle signed by `address`, or undefined when it can pay. */
export async function settleFeeShortfall(
  ctx: ControllerContext,
  address: string,
): Promise<SettleFeeShortfall | undefined> {
  return (await SettleFeeBudget.read(ctx, address)).take();
}

export function describeShortfall(s: SettleFeeShortfall): string {
  return `the settler ${s.address} cannot pay the settle tx fee: it needs ${s.required} ngonka and has ${s.balance} ngonka spendable (short by ${s.shortfall}); fund it and settle again`;
}
