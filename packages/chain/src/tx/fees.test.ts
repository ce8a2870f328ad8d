import { describe, expect, it } from 'vitest';
import type { FeeParams } from '../query/params.js';
import { MSG_CREATE_DEVSHARD_ESCROW, MSG_SETTLE_DEVSHARD_ESCROW } from './escrow-messages.js';
import { computeTxFee, DEFAULT_TX_GAS_LIMIT, gasPriceFor } from './fees.js';
import { MSG_SEND } from './messages.js';

const params = (over: Partial<FeeParams> = {}): FeeParams => ({
  minGasPriceNgonka: 0n,
  enabledFeeGroups: ['cosmos', 'epoch'],
  groups: [
    { name: 'cosmos', minGasPrice: 12n, typeUrls: [MSG_SEND] },
    { name: 'epoch', minGasPrice: 3n, typeUrls: [MSG_CREATE_DEVSHARD_ESCROW] },
    { name: 'dormant', minGasPrice: 50n, typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW] },
  ],
  ...over,
});

describe('gasPriceFor (chain-and-network.md §2.3)', () => {
  it('uses the enabled group listing the message', () => {
    expect(gasPriceFor([MSG_CREATE_DEVSHARD_ESCROW], params(), 0n)).toBe(3n);
    expect(gasPriceFor([MSG_SEND], params(), 0n)).toBe(12n);
  });

  it('charges a message outside every enabled group the highest enabled group price', () => {
    expect(gasPriceFor(['/inference.inference.MsgOther'], params(), 0n)).toBe(12n);
    // Its only group is disabled: it is outside every enabled group.
    expect(gasPriceFor([MSG_SETTLE_DEVSHARD_ESCROW], params(), 0n)).toBe(12n);
  });

  it('takes the max with the configured floor and the global minimum', () => {
    expect(gasPriceFor([MSG_CREATE_DEVSHARD_ESCROW], params(), 10n)).toBe(10n);
    expect(gasPriceFor([MSG_CREATE_DEVSHARD_ESCROW], params({ minGasPriceNgonka: 20n }), 10n)).toBe(20n);
  });

  it('prices a multi-message tx at its most expensive message', () => {
    expect(gasPriceFor([MSG_CREATE_DEVSHARD_ESCROW, MSG_SEND], params(), 0n)).toBe(12n);
  });

  it('with no enabled groups or no fee params, pays the floor', () => {
    expect(gasPriceFor([MSG_SEND], params({ enabledFeeGroups: [] }), 4n)).toBe(4n);
    expect(gasPriceFor([MSG_SEND], null, 4n)).toBe(4n);
    expect(gasPriceFor([MSG_SEND], null, 0n)).toBe(0n);
  });
});

describe('computeTxFee', () => {
  it('is gas limit × price, with the 700000 default gas limit and floor 10', () => {
    expect(DEFAULT_TX_GAS_LIMIT).toBe(700_000n);
    expect(computeTxFee({ typeUrls: [MSG_CREATE_DEVSHARD_ESCROW], feeParams: params() })).toEqual({
      amount: 7_000_000n,
      gasLimit: 700_000n,
    });
    expect(
      computeTxFee({ typeUrls: [MSG_SEND], feeParams: params(), gasLimit: 200_000n, gasPriceFloor: 0n }),
    ).toEqual({
      amount: 2_400_000n,
      gasLimit: 200_000n,
    });
  });

  it('charges nothing for a settlement (fee-exempt, §2.3) unless asked to pay', () => {
    expect(computeTxFee({ typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW], feeParams: params() })).toEqual({
      amount: 0n,
      gasLimit: 700_000n,
    });
    expect(
      computeTxFee({ typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW], feeParams: params(), payExempt: true }).amount,
    ).toBe(8_400_000n); // in no enabled group: the highest enabled price, 12 × 700000
    // An enabled group listing the settlement prices it: that group's price, 50 × 700000.
    const priced = params({ enabledFeeGroups: ['cosmos', 'epoch', 'dormant'] });
    expect(computeTxFee({ typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW], feeParams: priced }).amount).toBe(
      35_000_000n,
    );
    // One non-exempt message makes the whole tx pay.
    expect(
      computeTxFee({ typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW, MSG_SEND], feeParams: params() }).amount,
    ).toBeGreaterThan(0n);
  });
});
