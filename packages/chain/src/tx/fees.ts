// Fee from the live fee params (chain-and-network.md §2.3):
//   price per message = the price of the enabled group listing its type URL (the highest, if several),
//                       else the highest enabled group price (a keeper test shows messages outside
//                       every group paying that);
//   tx price          = max(global min_gas_price_ngonka, every message's price, configured floor);
//   fee               = gas_limit × tx price.
// The floor covers validators' local min-gas-prices, which CheckTx may add on top (§2.3 "Check").
// MsgSettleDevshardEscrow is a network duty, fee-exempt for an allowlisted settler (every settler
// is: settling requires the allowlist): a tx of exempt messages only pays nothing. Paying would
// not be harmless: the chain deducts what is offered (700k gas × 10 = the price of 7,000 nonces).
// The exemption ends where the chain says so in its fee params: an exempt message that an enabled
// fee group lists by type URL is priced like any listed message (that group's price), so a chain
// that prices settlement is followed without configuration (the devnet does the same,
// packages/devnet/src/chain/fees.ts).
import type { FeeParams } from '../query/params.js';
import type { TxFee } from './build-tx.js';
import { MSG_SETTLE_DEVSHARD_ESCROW } from './escrow-messages.js';

/** Messages the chain lets through without a fee (chain-and-network.md §2.3 "Exempt"). */
export const FEE_EXEMPT_TYPE_URLS: ReadonlySet<string> = new Set([MSG_SETTLE_DEVSHARD_ESCROW]);

/** DEVSHARD_TX_GAS_LIMIT default (gateway-spec.md §2.10). */
export const DEFAULT_TX_GAS_LIMIT = 700_000n;
/** ngonka per gas; host documentation's `--gas-prices 10ngonka` (§2.3). */
export const DEFAULT_GAS_PRICE_FLOOR = 10n;

const max = (values: Iterable<bigint>) => {
  let m = 0n;
  for (const v of values) if (v > m) m = v;
  return m;
};

export function gasPriceFor(typeUrls: readonly string[], feeParams: FeeParams | null, floor: bigint): bigint {
  if (floor < 0n) throw new RangeError('gas price floor must not be negative');
  if (!feeParams) return floor;
  const enabled = new Set(feeParams.enabledFeeGroups);
  const groups = feeParams.groups.filter((g) => enabled.has(g.name));
  const highest = max(groups.map((g) => g.minGasPrice));
  const perMessage = typeUrls.map((url) => {
    const listing = groups.filter((g) => g.typeUrls.includes(url));
    return listing.length > 0 ? max(listing.map((g) => g.minGasPrice)) : highest;
  });
  return max([feeParams.minGasPriceNgonka, floor, ...perMessage]);
}

/** An enabled fee group lists `typeUrl` itself (not "outside every group"): the chain prices it. */
export function listedInEnabledGroup(typeUrl: string, feeParams: FeeParams | null): boolean {
  if (!feeParams) return false;
  const enabled = new Set(feeParams.enabledFeeGroups);
  return feeParams.groups.some((g) => enabled.has(g.name) && g.typeUrls.includes(typeUrl));
}

/** Every message is exempt (§2.3) and no enabled fee group prices it: the tx pays nothing. */
export function isFeeExempt(typeUrls: readonly string[], feeParams: FeeParams | null): boolean {
  return (
    typeUrls.length > 0 &&
    typeUrls.every((url) => FEE_EXEMPT_TYPE_URLS.has(url) && !listedInEnabledGroup(url, feeParams))
  );
}

export interface FeeInput {
  typeUrls: readonly string[];
  feeParams: FeeParams | null;
  gasLimit?: bigint;
  gasPriceFloor?: bigint;
  /** Price exempt messages like any other (for a chain whose validators insist on a fee). */
  payExempt?: boolean;
}

export function computeTxFee(input: FeeInput): TxFee {
  const gasLimit = input.gasLimit ?? DEFAULT_TX_GAS_LIMIT;
  if (gasLimit <= 0n) throw new RangeError('gas limit must be positive');
  if (isFeeExempt(input.typeUrls, input.feeParams) && !input.payExempt) return { amount: 0n, gasLimit };
  const price = gasPriceFor(input.typeUrls, input.feeParams, input.gasPriceFloor ?? DEFAULT_GAS_PRICE_FLOOR);
  return { amount: gasLimit * price, gasLimit };
}
