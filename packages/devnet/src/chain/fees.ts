// Fee and gas rules (chain-and-network.md §2.3). The required fee is gas_limit × price, where the
// price is the highest applicable enabled fee-group price over the tx's messages (a message outside
// every enabled group pays the highest enabled price), floored by min_gas_price_ngonka. Settlement
// by an allowlisted settler is a fee-exempt network duty, unless an enabled fee group lists
// MsgSettleDevshardEscrow by type URL: then it pays that group's price like any listed message. The
// default params list it nowhere (exempt, as on mainnet); a test prices settlement by adding such a
// group (startDevnet's `params`, or chain.updateParams at runtime).
//
// Gas used is a fixed model, not metering: tx bytes × 10 and 1,000 per secp256k1 verification (the
// SDK's TxSizeCostPerByte and SigVerifyCostSecp256k1), plus a per-message cost. It is deliberately
// lower than a real chain's, so a gas limit that works on mainnet (200k–500k) works here, while a
// silly limit still runs out of gas.
import { type FeeParams, MSG_CREATE_DEVSHARD_ESCROW, MSG_SETTLE_DEVSHARD_ESCROW } from '@gonka-gateway/chain';
import type { DecodedMsg, DecodedTx } from './decode-tx.js';
import type { ExecEnv } from './exec-env.js';
import { MSG_SEND } from './params.js';

export const GAS_PER_TX_BYTE = 10n;
export const GAS_PER_SIGNATURE = 1_000n;
const GAS_PER_MESSAGE: Record<DecodedMsg['typeUrl'], bigint> = {
  [MSG_SEND]: 20_000n,
  [MSG_CREATE_DEVSHARD_ESCROW]: 60_000n,
  [MSG_SETTLE_DEVSHARD_ESCROW]: 60_000n,
};
const GAS_PER_SETTLEMENT_SIGNATURE = 2_000n;

export function anteGas(tx: DecodedTx): bigint {
  return BigInt(tx.txBytes.length) * GAS_PER_TX_BYTE + GAS_PER_SIGNATURE;
}

export function messageGas(msg: DecodedMsg): bigint {
  const base = GAS_PER_MESSAGE[msg.typeUrl];
  if (msg.typeUrl === MSG_SETTLE_DEVSHARD_ESCROW) {
    return base + BigInt(msg.value.signatures.length) * GAS_PER_SETTLEMENT_SIGNATURE;
  }
  return base;
}

function priceForMessage(typeUrl: string, fee: FeeParams): bigint {
  const enabled = fee.groups.filter((g) => fee.enabledFeeGroups.includes(g.name));
  if (enabled.length === 0) return fee.minGasPriceNgonka;
  const own = enabled.find((g) => g.typeUrls.includes(typeUrl));
  // bigint has no Math.max: pick the highest price by sorting.
  const byPrice = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
  const highest = enabled
    .map((g) => g.minGasPrice)
    .sort(byPrice)
    .at(-1)!;
  const groupPrice = own ? own.minGasPrice : highest;
  return [groupPrice, fee.minGasPriceNgonka].sort(byPrice).at(-1)!;
}

/** True when an enabled fee group lists the message type itself. */
function listedInEnabledGroup(typeUrl: string, fee: FeeParams): boolean {
  return fee.groups.some((g) => fee.enabledFeeGroups.includes(g.name) && g.typeUrls.includes(typeUrl));
}

/**
 * True when every message is a settlement whose settler passes the escrow allowlist, and no enabled
 * fee group prices settlement.
 */
export function isFeeExempt(tx: DecodedTx, env: ExecEnv): boolean {
  return tx.messages.every(
    (m) =>
      m.typeUrl === MSG_SETTLE_DEVSHARD_ESCROW &&
      env.chain.isAllowedEscrowCreator(env.params, m.value.settler) &&
      !listedInEnabledGroup(m.typeUrl, env.params.fee),
  );
}

/** The minimum fee in ngonka for this tx's gas limit. */
export function requiredFee(tx: DecodedTx, env: ExecEnv): bigint {
  if (isFeeExempt(tx, env)) return 0n;
  let price = 0n;
  for (const m of tx.messages) {
    const p = priceForMessage(m.typeUrl, env.params.fee);
    if (p > price) price = p;
  }
  return tx.gasLimit * price;
}
