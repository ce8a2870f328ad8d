// Every create rejection the devnet makes reaches the user as a typed outcome from the library
// (failed at check_tx, code and raw_log, nothing charged) and as a one-line gwctl error with exit
// code 1 — caught before signing by gwctl's checks where it can, and reported from the chain with
// --skip-checks.
import {
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  type InferenceParams,
  PrivateKey,
  queryInferenceParams,
  type TxOutcome,
} from '@gonka-gateway/chain';
import { type DevAccount, type Devnet, GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  account,
  type CliRun,
  clientFor,
  cliWait,
  errorLine,
  gwctl,
  startChainDevnet,
  UNTIL_INCLUDED,
} from './harness.js';

let devnet: Devnet;
let client: ChainClient;
let params: InferenceParams;

beforeAll(async () => {
  devnet = await startChainDevnet({ epoch: { epochLength: 1_000_000 } });
  client = clientFor(devnet);
  params = await queryInferenceParams(client);
});

afterAll(async () => {
  await devnet?.close();
});

afterEach(() => {
  devnet.faults.clear();
});

interface Attempt {
  outcome: TxOutcome;
  balanceBefore: bigint;
  escrowsBefore: bigint;
}

async function createWithLibrary(key: PrivateKey, amount: bigint, modelId = QWEN_MODEL): Promise<Attempt> {
  const live = await queryInferenceParams(client);
  const signer = await connectTxSigner(client, key);
  const tx = signer.prepareCreateEscrow({ amount, modelId }, live.fee);
  const balanceBefore = devnet.chain.balanceOf(key.address);
  const escrowsBefore = devnet.chain.lastEscrowId();
  const outcome = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
  expect(outcome.txHash).toBe(tx.txHash);
  return { outcome, balanceBefore, escrowsBefore };
}

/** Refused at broadcast: typed outcome, nothing charged, no escrow, nothing indexed. */
function expectRefused(attempt: Attempt, key: PrivateKey, code: number, codespace: string, log: RegExp) {
  const { outcome } = attempt;
  if (outcome.status !== 'failed') throw new Error(`expected failed, got ${JSON.stringify(outcome)}`);
  expect(outcome).toMatchObject({ stage: 'check_tx', code, codespace, height: null });
  expect(outcome.rawLog).toMatch(log);
  devnet.blocks.step();
  expect(devnet.chain.tx(outcome.txHash)).toBeUndefined();
  expect(devnet.chain.balanceOf(key.address)).toBe(attempt.balanceBefore);
  expect(devnet.chain.lastEscrowId()).toBe(attempt.escrowsBefore);
}

const create = (key: PrivateKey, amount: bigint, extra: string[] = []) =>
  gwctl(
    devnet,
    [
      'escrow',
      'create',
      '--amount',
      amount.toString(),
      '--model',
      QWEN_MODEL,
      ...cliWait(UNTIL_INCLUDED),
      ...extra,
    ],
    {
      key,
    },
  );

/** gwctl refused before signing: exit 1, nothing printed on stdout, nothing sent. */
async function expectNotSent(key: PrivateKey, amount: bigint, message: RegExp): Promise<CliRun> {
  const before = devnet.chain.balanceOf(key.address);
  const run = await create(key, amount);
  expect(run.code).toBe(1);
  expect(run.stdout).toBe('');
  expect(errorLine(run)).toMatch(/^gwctl: not sent: /);
  expect(errorLine(run)).toMatch(message);
  expect(errorLine(run)).toContain('(use --skip-checks to send anyway)');
  devnet.blocks.step();
  expect(devnet.chain.balanceOf(key.address)).toBe(before);
  return run;
}

/** gwctl sent it (--skip-checks) and the chain refused it: hash printed, exit 1, code and log on stderr. */
async function expectChainRefusal(
  key: PrivateKey,
  amount: bigint,
  code: number,
  codespace: string,
  log: RegExp,
) {
  const before = devnet.chain.balanceOf(key.address);
  const escrows = devnet.chain.lastEscrowId();
  const run = await create(key, amount, ['--skip-checks']);
  expect(run.code).toBe(1);
  const hash = /^tx_hash: ([0-9A-F]{64})\n$/.exec(run.stdout)?.[1];
  expect(hash, run.stdout).toBeDefined();
  const line = errorLine(run);
  expect(line).toContain(
    `gwctl: tx ${hash} refused at broadcast (no fee charged): code ${code} ${codespace}: `,
  );
  expect(line).toMatch(log);
  expect(run.stderr).toContain(`refused by CheckTx (code ${code})`);
  devnet.blocks.step();
  expect(devnet.chain.balanceOf(key.address)).toBe(before);
  expect(devnet.chain.lastEscrowId()).toBe(escrows);
}

describe('creator not allowlisted', () => {
  const outsider = () => account(devnet, 'outsider');

  it('library: failed at check_tx with the allowlist error', async () => {
    const attempt = await createWithLibrary(outsider().key, 5n * GNK);
    expectRefused(attempt, outsider().key, 1170, 'inference', /allowlist/);
  });

  it('gwctl: refused before signing, and from the chain with --skip-checks', async () => {
    await expectNotSent(
      outsider().key,
      5n * GNK,
      new RegExp(`${outsider().address} is not on devshard_escrow_params.allowed_creator_addresses`),
    );
    await expectChainRefusal(outsider().key, 5n * GNK, 1170, 'inference', /allowlist/);
  });

  it('a creator removed from the allowlist (governance change) is refused the same way', async () => {
    const creator = account(devnet, 'creator-0');
    devnet.faults.set({ removedCreators: [creator.address] });
    expectRefused(
      await createWithLibrary(creator.key, 5n * GNK),
      creator.key,
      1170,
      'inference',
      /allowlist/,
    );
    await expectNotSent(creator.key, 5n * GNK, /is not on devshard_escrow_params.allowed_creator_addresses/);
    await expectChainRefusal(creator.key, 5n * GNK, 1170, 'inference', /allowlist/);
  });
});

describe('amount outside [min_amount, max_amount]', () => {
  const creator = () => account(devnet, 'creator-1');
  const min = () => params.devshardEscrow.minAmount;
  const max = () => params.devshardEscrow.maxAmount;

  it('library: one below min and one above max fail at check_tx; the bounds themselves are accepted', async () => {
    expectRefused(
      await createWithLibrary(creator().key, min() - 1n),
      creator().key,
      1171,
      'inference',
      /out of range/,
    );
    expectRefused(
      await createWithLibrary(creator().key, max() + 1n),
      creator().key,
      1171,
      'inference',
      /out of range/,
    );
    for (const amount of [min(), max()]) {
      const { outcome } = await createWithLibrary(creator().key, amount);
      expect(outcome.status).toBe('included');
    }
  });

  it('gwctl: below min and above max are refused before signing, and by the chain with --skip-checks', async () => {
    await expectNotSent(creator().key, min() - 1n, /amount is below min_amount 5000000000 ngonka \(5 GNK\)/);
    await expectNotSent(
      creator().key,
      max() + 1n,
      /amount is above max_amount 10000000000 ngonka \(10 GNK\)/,
    );
    await expectChainRefusal(creator().key, min() - 1n, 1171, 'inference', /out of range/);
    await expectChainRefusal(creator().key, max() + 1n, 1171, 'inference', /out of range/);
  });
});

describe('insufficient funds', () => {
  // An allowlisted creator holding exactly 5 GNK: the fee is paid, the 5 GNK deposit is not covered.
  let poor: PrivateKey;
  beforeAll(() => {
    poor = PrivateKey.random();
    devnet.chain.fund(poor.address, 5n * GNK);
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.allowedCreatorAddresses.push(poor.address);
    });
  });

  it('library: failed at check_tx with sdk code 5, nothing charged', async () => {
    expectRefused(await createWithLibrary(poor, 5n * GNK), poor, 5, 'sdk', /insufficient funds/);
  });

  it('gwctl: refused before signing (balance vs amount + fee), and by the chain with --skip-checks', async () => {
    await expectNotSent(
      poor,
      5n * GNK,
      /balance 5000000000 ngonka \(5 GNK\) does not cover amount \+ fee 5007000000 ngonka \(5\.007 GNK\)/,
    );
    await expectChainRefusal(poor, 5n * GNK, 5, 'sdk', /insufficient funds/);
  });

  it('locked funds (spendable 0, bank balance intact) are reported by the chain as insufficient funds', async () => {
    const creator = account(devnet, 'creator-2');
    devnet.faults.set({ insufficientFunds: [creator.address] });
    expectRefused(
      await createWithLibrary(creator.key, 5n * GNK),
      creator.key,
      5,
      'sdk',
      /insufficient funds/,
    );
    // gwctl's pre-check reads the spendable balance, so it refuses before signing; with
    // --skip-checks the chain's own refusal is what the operator sees.
    await expectChainRefusal(creator.key, 5n * GNK, 5, 'sdk', /insufficient funds/);
    const run = await create(creator.key, 5n * GNK);
    expect(run.code).toBe(1);
    expect(errorLine(run)).toMatch(/not sent: balance .* does not cover amount \+ fee/);
  });
});

describe('per-epoch escrow cap', () => {
  const creator = () => account(devnet, 'creator-0');

  it('library and gwctl: the cap fault is a check_tx failure with the cap error', async () => {
    devnet.faults.set({ epochCapReached: true });
    expectRefused(
      await createWithLibrary(creator().key, 5n * GNK),
      creator().key,
      1172,
      'inference',
      /limit/,
    );
    const run = await create(creator().key, 5n * GNK);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^tx_hash: [0-9A-F]{64}\n$/);
    expect(errorLine(run)).toMatch(
      /refused at broadcast \(no fee charged\): code 1172 inference: .*epoch 0 already has 100 escrows \(max 100\)/,
    );
  });

  it('library and gwctl: a real cap (max_escrows_per_epoch reached by earlier escrows) is refused the same way', async () => {
    const made = Number(devnet.chain.lastEscrowId());
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.maxEscrowsPerEpoch = BigInt(made);
    });
    try {
      const attempt = await createWithLibrary(creator().key, 5n * GNK);
      expectRefused(
        attempt,
        creator().key,
        1172,
        'inference',
        new RegExp(`already has ${made} escrows \\(max ${made}\\)`),
      );
      const run = await create(creator().key, 5n * GNK);
      expect(run.code).toBe(1);
      expect(errorLine(run)).toMatch(/code 1172 inference/);
    } finally {
      devnet.chain.updateParams((p) => {
        p.devshardEscrow.maxEscrowsPerEpoch = 100n;
      });
    }
  });
});

describe('model without validation weights in the epoch', () => {
  it('library and gwctl: refused at check_tx', async () => {
    const creator: DevAccount = account(devnet, 'creator-0');
    devnet.faults.set({ modelsMissing: [QWEN_MODEL] });
    expectRefused(
      await createWithLibrary(creator.key, 5n * GNK),
      creator.key,
      1173,
      'inference',
      /validation weights/,
    );
    const run = await create(creator.key, 5n * GNK);
    expect(run.code).toBe(1);
    expect(errorLine(run)).toMatch(/code 1173 inference: .*validation weights/);
  });
});
