// Create an escrow with the library (prepare → record hash → broadcast and wait → escrow id from
// the events) and through gwctl, and check the devnet's own row, balances and tx index against what
// the client reports.
import {
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  findEscrowCreatedEvents,
  type InferenceParams,
  type PreparedTx,
  queryEscrow,
  queryInferenceParams,
  txHash,
} from '@gonka-gateway/chain';
import { type Devnet, GNK, MINIMAX_MODEL, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  account,
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
  // A long epoch keeps every escrow of this file in epoch 0 (per-epoch counts stay predictable).
  devnet = await startChainDevnet({ epoch: { epochLength: 1_000_000 } });
  client = clientFor(devnet);
  params = await queryInferenceParams(client);
});

afterAll(async () => {
  await devnet?.close();
});

const hostAddresses = () => new Set(devnet.participants.map((p) => p.address));

describe('create an escrow with the library', () => {
  it('records the hash before sending, is included, and the escrow id from the events names the devnet row', async () => {
    const creator = account(devnet, 'creator-0');
    const signer = await connectTxSigner(client, creator.key);
    expect(signer.chainId).toBe(devnet.chainId);
    expect(signer.accountNumber).toBe(devnet.chain.account(creator.address)!.accountNumber);

    const amount = 5n * GNK + 123n;
    const tx: PreparedTx = signer.prepareCreateEscrow({ amount, modelId: QWEN_MODEL }, params.fee);
    // What a gateway persists before anything leaves the process.
    const recorded = { hash: tx.txHash, bytes: tx.txBytes, timeoutNs: tx.timeoutTimestampNs };
    expect(recorded.hash).toBe(txHash(tx.txBytes));
    expect(devnet.chain.tx(recorded.hash)).toBeUndefined();
    // Highest enabled fee-group price (10 ngonka/gas) × default gas limit 700000 (§2.3).
    expect(tx.fee).toEqual({ amount: 7_000_000n, gasLimit: 700_000n });

    const before = devnet.chain.balanceOf(creator.address);
    const moduleBefore = devnet.chain.balanceOf(devnet.chain.moduleAddress('inference'));
    const outcome = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
    if (outcome.status !== 'included') throw new Error(`not included: ${JSON.stringify(outcome)}`);
    expect(outcome.txHash).toBe(recorded.hash);

    const indexed = devnet.chain.tx(recorded.hash)!;
    expect(indexed.height).toBe(outcome.height);
    expect(indexed.result.code).toBe(0);

    const events = findEscrowCreatedEvents(outcome.events);
    expect(events).toHaveLength(1);
    const created = events[0]!;
    const row = devnet.chain.escrow(created.escrowId);
    expect(row).toBeDefined();
    expect(row).toMatchObject({
      id: created.escrowId,
      creator: creator.address,
      amount,
      modelId: QWEN_MODEL,
    });
    expect(row!.slots).toHaveLength(params.devshardEscrow.groupSize);
    for (const slot of row!.slots) expect(hostAddresses()).toContain(slot);
    expect(created).toEqual({
      escrowId: row!.id,
      creator: creator.address,
      amount,
      epochIndex: row!.epochIndex,
      modelId: QWEN_MODEL,
    });

    // Money: the creator paid amount + fee, the module holds the amount.
    expect(before - devnet.chain.balanceOf(creator.address)).toBe(amount + tx.fee.amount);
    expect(devnet.chain.balanceOf(devnet.chain.moduleAddress('inference')) - moduleBefore).toBe(amount);

    // The library's escrow query reads the same row.
    const queried = await queryEscrow(client, created.escrowId);
    expect(queried.found).toBe(true);
    expect(queried.escrow).toMatchObject({
      id: row!.id,
      creator: row!.creator,
      amount: row!.amount,
      slots: [...row!.slots],
      epochIndex: row!.epochIndex,
      appHash: row!.appHash,
      settled: false,
      tokenPrice: row!.tokenPrice,
      modelId: QWEN_MODEL,
      createDevshardFee: row!.createDevshardFee,
      feePerNonce: row!.feePerNonce,
      validationRate: row!.validationRate,
      voteThresholdFactor: row!.voteThresholdFactor,
      maxNonce: BigInt(row!.maxNonce),
      refusalTimeout: row!.refusalTimeout,
      executionTimeout: row!.executionTimeout,
    });
  });

  it('gives one escrow per tx when a signer sends several, each with its own timeout timestamp', async () => {
    const creator = account(devnet, 'creator-1');
    const signer = await connectTxSigner(client, creator.key);
    const txs = [QWEN_MODEL, MINIMAX_MODEL].map((modelId) =>
      signer.prepareCreateEscrow({ amount: 6n * GNK, modelId }, params.fee),
    );
    expect(txs[1]!.timeoutTimestampNs).toBeGreaterThan(txs[0]!.timeoutTimestampNs);
    const outcomes = await Promise.all(txs.map((tx) => broadcastAndWait(client, tx, UNTIL_INCLUDED)));
    const ids = outcomes.map((o) => {
      if (o.status !== 'included') throw new Error(`not included: ${JSON.stringify(o)}`);
      return findEscrowCreatedEvents(o.events)[0]!.escrowId;
    });
    expect(new Set(ids).size).toBe(2);
    expect(ids.map((id) => devnet.chain.escrow(id)!.modelId)).toEqual([QWEN_MODEL, MINIMAX_MODEL]);
    // host-3 does not serve MiniMax, so it holds no MiniMax slot.
    const host3 = devnet.participants.find((p) => p.name === 'host-3')!.address;
    expect(devnet.chain.escrow(ids[1]!)!.slots).not.toContain(host3);
  });

  it('reports a tx that passed CheckTx but failed in its block as failed at deliver_tx, fee charged', async () => {
    // Room for exactly one more escrow in this epoch; two creates land in the same block, so both
    // pass CheckTx and the second fails at delivery.
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.maxEscrowsPerEpoch = devnet.chain.lastEscrowId() + 1n;
    });
    const first = account(devnet, 'creator-1');
    const second = account(devnet, 'creator-2');
    const [s1, s2] = await Promise.all([
      connectTxSigner(client, first.key),
      connectTxSigner(client, second.key),
    ]);
    const tx1 = s1.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, params.fee);
    const tx2 = s2.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, params.fee);
    const before2 = devnet.chain.balanceOf(second.address);
    devnet.blocks.pause();
    try {
      const broadcasted = (tx: PreparedTx) => {
        let done!: () => void;
        const sent = new Promise<void>((resolve) => (done = resolve));
        const outcome = broadcastAndWait(client, tx, { ...UNTIL_INCLUDED, onBroadcast: () => done() });
        return { sent, outcome };
      };
      const a = broadcasted(tx1);
      await a.sent;
      const b = broadcasted(tx2);
      await b.sent;
      devnet.blocks.step();
      const [o1, o2] = await Promise.all([a.outcome, b.outcome]);
      expect(o1.status).toBe('included');
      expect(o2).toMatchObject({
        status: 'failed',
        stage: 'deliver_tx',
        txHash: tx2.txHash,
        code: 1172,
        codespace: 'inference',
        height: devnet.chain.tx(tx1.txHash)!.height,
      });
      expect(o2.status === 'failed' && o2.rawLog).toMatch(/limit/);
      // The failed tx paid its fee and locked nothing.
      expect(before2 - devnet.chain.balanceOf(second.address)).toBe(tx2.fee.amount);
    } finally {
      devnet.blocks.resume();
      devnet.chain.updateParams((p) => {
        p.devshardEscrow.maxEscrowsPerEpoch = 100n;
      });
    }
  });
});

describe('gwctl against the devnet', () => {
  const creator = () => account(devnet, 'creator-2');

  it('address prints the key address', async () => {
    const run = await gwctl(devnet, ['address'], { key: creator().key });
    expect(run).toMatchObject({ code: 0, stdout: `${creator().address}\n` });
    const json = await gwctl(devnet, ['address', '--json'], { key: creator().key });
    expect(JSON.parse(json.stdout)).toEqual({ address: creator().address });
  });

  it('balance prints the bank balance of the key, or of a given address', async () => {
    const own = await gwctl(devnet, ['balance'], { key: creator().key });
    expect(own.code).toBe(0);
    const amount = devnet.chain.balanceOf(creator().address);
    expect(own.stdout).toMatch(new RegExp(`^${creator().address}: ${amount} ngonka \\(`));

    const host = devnet.participants[0]!;
    const other = await gwctl(devnet, ['--json', 'balance', host.address]);
    expect(other.code).toBe(0);
    expect(JSON.parse(other.stdout)).toMatchObject({
      address: host.address,
      denom: 'ngonka',
      amount: devnet.chain.balanceOf(host.address).toString(),
    });
  });

  it('params shows the live escrow limits, allowlist and create fee', async () => {
    const run = await gwctl(devnet, ['params']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/min_amount\s+5000000000 ngonka \(5 GNK\)/);
    expect(run.stdout).toMatch(/max_amount\s+10000000000 ngonka \(10 GNK\)/);
    expect(run.stdout).toContain(creator().address);
    expect(run.stdout).not.toContain(account(devnet, 'outsider').address);
    expect(run.stdout).toContain('create-escrow fee now: 7000000 ngonka (0.007 GNK) at gas limit 700000');

    const json = await gwctl(devnet, ['params', '--json', '--gas-limit', '200000']);
    expect(json.code).toBe(0);
    const p = JSON.parse(json.stdout);
    const live = devnet.chain.params();
    expect(p.devshardEscrow).toMatchObject({
      minAmount: live.devshardEscrow.minAmount.toString(),
      maxAmount: live.devshardEscrow.maxAmount.toString(),
      groupSize: live.devshardEscrow.groupSize,
      allowedCreatorAddresses: live.devshardEscrow.allowedCreatorAddresses,
    });
    expect(p.createEscrowFeeEstimate).toMatchObject({ amount: '2000000', gasLimit: '200000' });
  });

  it('escrow create prints the tx hash before broadcasting, then the escrow id; escrow show reads it back', async () => {
    const amount = 7n * GNK;
    let hashSeenBeforeBroadcast: boolean | undefined;
    const run = await gwctl(
      devnet,
      ['escrow', 'create', '--amount', amount.toString(), '--model', QWEN_MODEL, ...cliWait(UNTIL_INCLUDED)],
      {
        key: creator().key,
        onStdout: (chunk) => {
          const m = /^tx_hash: ([0-9A-F]{64})$/m.exec(chunk);
          if (m) hashSeenBeforeBroadcast = !devnet.chain.tx(m[1]!) && devnet.core.blocks.mempoolSize === 0;
        },
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    const hash = /^tx_hash: ([0-9A-F]{64})$/.exec(lines[0]!)?.[1];
    expect(hash).toBeDefined();
    expect(hashSeenBeforeBroadcast).toBe(true);
    const indexed = devnet.chain.tx(hash!)!;
    const id = BigInt(/^escrow_id: (\d+)$/.exec(lines[1]!)![1]!);
    expect(lines[2]).toBe(`height: ${indexed.height}`);
    expect(devnet.chain.escrow(id)).toMatchObject({
      creator: creator().address,
      amount,
      modelId: QWEN_MODEL,
    });
    expect(run.stderr).toContain('fee 7000000 ngonka');

    const show = await gwctl(devnet, ['escrow', 'show', id.toString()]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`^id\\s+${id}$`, 'm'));
    expect(show.stdout).toMatch(new RegExp(`^creator\\s+${creator().address}$`, 'm'));
    expect(show.stdout).toMatch(/^amount\s+7000000000 ngonka \(7 GNK\)$/m);
    expect(show.stdout).toMatch(new RegExp(`^model_id\\s+${QWEN_MODEL.replace(/[/.]/g, '\\$&')}$`, 'm'));
    expect(show.stdout).toMatch(/^settled\s+false$/m);
    expect(show.stdout).toMatch(/^slots\s+16 \(/m);

    const showJson = await gwctl(devnet, ['escrow', 'show', id.toString(), '--json']);
    const row = devnet.chain.escrow(id)!;
    expect(JSON.parse(showJson.stdout)).toMatchObject({
      id: id.toString(),
      creator: row.creator,
      amount: row.amount.toString(),
      modelId: row.modelId,
      slots: [...row.slots],
      epochIndex: row.epochIndex.toString(),
      settled: false,
    });
  });

  it('escrow create --json prints the hash line, then the result line', async () => {
    const run = await gwctl(
      devnet,
      [
        '--json',
        'escrow',
        'create',
        '--amount',
        '5000000000',
        '--model',
        MINIMAX_MODEL,
        ...cliWait(UNTIL_INCLUDED),
      ],
      { key: creator().key },
    );
    expect(run.code, run.stderr).toBe(0);
    const [first, second, ...rest] = run.stdout.trimEnd().split('\n');
    expect(rest).toEqual([]);
    const announced = JSON.parse(first!);
    const result = JSON.parse(second!);
    expect(announced).toMatchObject({ fee: '7000000', gas_limit: '700000' });
    expect(result).toMatchObject({ status: 'included', tx_hash: announced.tx_hash });
    expect(result.height).toBe(devnet.chain.tx(announced.tx_hash)!.height.toString());
    expect(devnet.chain.escrow(BigInt(result.escrow_id))).toMatchObject({
      creator: creator().address,
      amount: 5n * GNK,
      modelId: MINIMAX_MODEL,
    });
  });

  it('escrow create --dry-run signs and prints the hash but sends nothing', async () => {
    const before = devnet.chain.balanceOf(creator().address);
    const last = devnet.chain.lastEscrowId();
    const run = await gwctl(
      devnet,
      ['escrow', 'create', '--amount', '5000000000', '--model', QWEN_MODEL, '--dry-run'],
      {
        key: creator().key,
      },
    );
    expect(run.code).toBe(0);
    const hash = /^tx_hash: ([0-9A-F]{64})$/m.exec(run.stdout)![1]!;
    devnet.blocks.step();
    expect(devnet.chain.tx(hash)).toBeUndefined();
    expect(devnet.chain.lastEscrowId()).toBe(last);
    expect(devnet.chain.balanceOf(creator().address)).toBe(before);
  });

  it('escrow show of an id that does not exist is a one-line error', async () => {
    const id = (devnet.chain.lastEscrowId() + 1000n).toString();
    const run = await gwctl(devnet, ['escrow', 'show', id]);
    expect(run.code).toBe(1);
    expect(errorLine(run)).toBe(`gwctl: escrow ${id} not found`);
  });
});
