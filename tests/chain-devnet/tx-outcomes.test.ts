// The three tx outcomes under broadcast faults (chain-and-network.md §2.4).
// A tx whose result is never indexed, or that waits on a halted chain, ends as "unknown" with its
// hash — never as a failure (gwctl exit 3); a broadcast whose answer is lost after the node took the
// tx resolves to "included" by polling.
import {
  type BroadcastResult,
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  findEscrowCreatedEvents,
  type InferenceParams,
  PrivateKey,
  pollTx,
  queryInferenceParams,
  type TxSigner,
} from '@gonka-gateway/chain';
import { type Devnet, GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  account,
  type CliRun,
  clientFor,
  cliWait,
  errorLine,
  gwctl,
  startChainDevnet,
  UNTIL_GIVING_UP,
  UNTIL_INCLUDED,
} from './harness.js';

let devnet: Devnet;
let client: ChainClient;
let params: InferenceParams;
let signer: TxSigner;

beforeAll(async () => {
  devnet = await startChainDevnet({ epoch: { epochLength: 1_000_000 } });
  client = clientFor(devnet);
  params = await queryInferenceParams(client);
  signer = await connectTxSigner(client, account(devnet, 'creator-0').key);
});

afterAll(async () => {
  await devnet?.close();
});

afterEach(() => {
  devnet.faults.clear();
  devnet.blocks.resume();
});

const prepareCreate = () => signer.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, params.fee);

const cliCreate = (wait: { intervalMs: number; timeoutMs: number }, extra: string[] = []) =>
  gwctl(
    devnet,
    ['escrow', 'create', '--amount', '5000000000', '--model', QWEN_MODEL, ...cliWait(wait), ...extra],
    {
      key: account(devnet, 'creator-1').key,
    },
  );

/** gwctl exit 3: the hash alone on stdout, and a stderr line telling how to reconcile. */
function expectCliUnknown(run: CliRun): string {
  expect(run.code).toBe(3);
  const hash = /^tx_hash: ([0-9A-F]{64})\n$/.exec(run.stdout)?.[1];
  expect(hash, run.stdout).toBeDefined();
  const line = errorLine(run);
  expect(line).toContain(`gwctl: tx ${hash} outcome unknown (`);
  expect(line).toContain(`it may still be committed — check with: gwctl tx status ${hash}`);
  expect(line).not.toMatch(/fail/i);
  return hash!;
}

describe('a broadcast whose result is never indexed', () => {
  it('library: unknown with the tx hash and timeout timestamp, although the tx executed', async () => {
    devnet.faults.set({ broadcast: { mode: 'never-indexed' } });
    const escrows = devnet.chain.lastEscrowId();
    const tx = prepareCreate();
    const outcome = await broadcastAndWait(client, tx, UNTIL_GIVING_UP);
    expect(outcome).toMatchObject({
      status: 'unknown',
      txHash: tx.txHash,
      timeoutTimestampNs: tx.timeoutTimestampNs,
    });
    expect(outcome.status === 'unknown' && outcome.reason).toMatch(/not indexed within/);
    // Why "unknown" must never be treated as "failed": the escrow exists and the money moved.
    devnet.blocks.step(); // in case the timer has not produced the block yet
    expect(devnet.chain.lastEscrowId()).toBe(escrows + 1n);
    expect(devnet.chain.escrow(escrows + 1n)!.creator).toBe(signer.address);
    expect(devnet.chain.tx(tx.txHash)).toBeUndefined();
  });

  it('gwctl: exit 3 with the hash printed; tx status keeps reporting it as unknown (exit 3)', async () => {
    devnet.faults.set({ broadcast: { mode: 'never-indexed' } });
    const run = await cliCreate(UNTIL_GIVING_UP);
    const hash = expectCliUnknown(run);
    expect(run.stderr).toContain('broadcast: accepted by CheckTx');

    const status = await gwctl(devnet, ['tx', 'status', hash]);
    expect(status.code).toBe(3);
    expect(status.stdout).toMatch(/^status\s+unknown$/m);
    expect(status.stdout).toContain(hash);
  });
});

describe('a broadcast that times out or drops after the node took the tx', () => {
  it('library: no answer within the client timeout, then polling finds it included', async () => {
    devnet.faults.set({ broadcast: { mode: 'no-response', remaining: 1 } });
    const impatient = clientFor(devnet, { timeoutMs: 500 });
    const tx = prepareCreate();
    const seen: BroadcastResult[] = [];
    const outcome = await broadcastAndWait(impatient, tx, {
      ...UNTIL_INCLUDED,
      onBroadcast: (r) => seen.push(r),
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ kind: 'no_answer' });
    expect(seen[0]!.kind === 'no_answer' && seen[0]!.reason).toMatch(/timed out|no answer within 500 ms/);
    if (outcome.status !== 'included') throw new Error(`not included: ${JSON.stringify(outcome)}`);
    expect(outcome.height).toBe(devnet.chain.tx(tx.txHash)!.height);
    const id = findEscrowCreatedEvents(outcome.events)[0]!.escrowId;
    expect(devnet.chain.escrow(id)!.creator).toBe(signer.address);
  });

  it('library: a dropped connection after the broadcast also resolves to included', async () => {
    devnet.faults.set({ broadcast: { mode: 'drop-connection', remaining: 1 } });
    const tx = prepareCreate();
    const seen: BroadcastResult[] = [];
    const outcome = await broadcastAndWait(client, tx, {
      ...UNTIL_INCLUDED,
      onBroadcast: (r) => seen.push(r),
    });
    expect(seen[0]).toMatchObject({ kind: 'no_answer' });
    expect(outcome.status).toBe('included');
  });

  it('gwctl: the escrow id is printed after polling; exit 0', async () => {
    devnet.faults.set({ broadcast: { mode: 'no-response', remaining: 1 } });
    const run = await cliCreate(UNTIL_INCLUDED, ['--timeout-ms', '500']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/broadcast: no answer \(.*\); polling in case it landed/);
    const [hashLine, idLine] = run.stdout.split('\n');
    const hash = /^tx_hash: ([0-9A-F]{64})$/.exec(hashLine!)![1]!;
    const id = BigInt(/^escrow_id: (\d+)$/.exec(idLine!)![1]!);
    expect(devnet.chain.tx(hash)!.result.code).toBe(0);
    expect(devnet.chain.escrow(id)!.creator).toBe(account(devnet, 'creator-1').address);
  });
});

describe('reconciling', () => {
  it('tx lookups that fail for a while (HTTP 500) do not end the wait: the tx is found included', async () => {
    devnet.faults.set({ chainQuery: { status: 500, match: '/cosmos/tx/v1beta1/txs/', remaining: 4 } });
    const tx = prepareCreate();
    const errors: string[] = [];
    const outcome = await broadcastAndWait(client, tx, {
      ...UNTIL_INCLUDED,
      onProgress: (p) => {
        if (p.last !== 'not_found') errors.push(p.last.code);
      },
    });
    expect(outcome.status).toBe('included');
    expect(errors.length).toBeGreaterThan(0);
    expect(new Set(errors)).toEqual(new Set(['CHAIN_ERR_HTTP_STATUS']));
  });

  it('re-sending the bytes of an included tx reports the same inclusion and creates nothing twice', async () => {
    const tx = prepareCreate();
    const first = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
    if (first.status !== 'included') throw new Error(`not included: ${JSON.stringify(first)}`);
    const escrows = devnet.chain.lastEscrowId();
    const balance = devnet.chain.balanceOf(signer.address);
    const again = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
    expect(again).toMatchObject({ status: 'included', txHash: tx.txHash, height: first.height });
    devnet.blocks.step();
    expect(devnet.chain.lastEscrowId()).toBe(escrows);
    expect(devnet.chain.balanceOf(signer.address)).toBe(balance);
  });
});

describe('blocks paused (halted chain)', () => {
  it('library: unknown while paused; the recorded bytes re-sent after resume end included', async () => {
    devnet.blocks.pause();
    const tx = prepareCreate();
    const recorded = { txHash: tx.txHash, txBytes: tx.txBytes, timeoutTimestampNs: tx.timeoutTimestampNs };
    const outcome = await broadcastAndWait(client, tx, UNTIL_GIVING_UP);
    expect(outcome).toMatchObject({
      status: 'unknown',
      txHash: tx.txHash,
      timeoutTimestampNs: tx.timeoutTimestampNs,
    });

    devnet.blocks.resume();
    // Reconciling: re-broadcasting the same bytes is harmless (the node already holds them).
    const seen: BroadcastResult[] = [];
    const again = await broadcastAndWait(client, recorded, {
      ...UNTIL_INCLUDED,
      onBroadcast: (r) => seen.push(r),
    });
    expect(seen[0]).toMatchObject({ kind: 'accepted' });
    expect(again.status).toBe('included');
  });

  it('gwctl: exit 3 with the hash; tx status --wait reports it included once blocks resume', async () => {
    devnet.blocks.pause();
    const hash = expectCliUnknown(await cliCreate(UNTIL_GIVING_UP));
    const still = await gwctl(devnet, ['tx', 'status', hash]);
    expect(still.code).toBe(3);

    devnet.blocks.resume();
    const status = await gwctl(devnet, ['tx', 'status', hash, '--wait', ...cliWait(UNTIL_INCLUDED)]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^status\s+included$/m);
    expect(status.stdout).toMatch(new RegExp(`^height\\s+${devnet.chain.tx(hash)!.height}$`, 'm'));
    expect((await pollTx(client, hash, UNTIL_INCLUDED)).status).toBe('included');
  });
});

describe('a tx dropped from the mempool', () => {
  it('library: unknown, and nothing changed on chain', async () => {
    devnet.faults.set({ broadcast: { mode: 'never-included' } });
    const escrows = devnet.chain.lastEscrowId();
    const before = devnet.chain.balanceOf(signer.address);
    const tx = prepareCreate();
    const outcome = await broadcastAndWait(client, tx, UNTIL_GIVING_UP);
    expect(outcome).toMatchObject({ status: 'unknown', txHash: tx.txHash });
    devnet.blocks.step();
    expect(devnet.chain.lastEscrowId()).toBe(escrows);
    expect(devnet.chain.balanceOf(signer.address)).toBe(before);
  });
});

describe('tx status of settled outcomes', () => {
  it('gwctl tx status: included → exit 0; a failed delivery → exit 1 with code and log', async () => {
    const ok = await cliCreate(UNTIL_INCLUDED);
    expect(ok.code).toBe(0);
    const okHash = /^tx_hash: ([0-9A-F]{64})$/m.exec(ok.stdout)![1]!;
    const included = await gwctl(devnet, ['--json', 'tx', 'status', okHash]);
    expect(included.code).toBe(0);
    expect(JSON.parse(included.stdout)).toMatchObject({ status: 'included', txHash: okHash });

    // A create that passes CheckTx and fails in its block: the allowlist changes in between.
    const fresh = PrivateKey.random();
    devnet.chain.fund(fresh.address, 20n * GNK);
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.allowedCreatorAddresses.push(fresh.address);
    });
    const freshSigner = await connectTxSigner(client, fresh);
    devnet.blocks.pause();
    const tx = freshSigner.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, params.fee);
    const pending = broadcastAndWait(client, tx, UNTIL_INCLUDED);
    await waitFor(() => devnet.core.blocks.mempoolSize === 1);
    devnet.faults.set({ removedCreators: [fresh.address] });
    devnet.blocks.step();
    const outcome = await pending;
    expect(outcome).toMatchObject({
      status: 'failed',
      stage: 'deliver_tx',
      code: 1170,
      codespace: 'inference',
    });

    const failed = await gwctl(devnet, ['tx', 'status', tx.txHash]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^status\s+failed \(deliver_tx\)$/m);
    expect(failed.stdout).toMatch(/^code\s+1170 inference$/m);
  });
});

describe('a create that fails in its block', () => {
  it('gwctl escrow create: exit 1, "failed in block H (fee charged)" with code and log', async () => {
    const creator = account(devnet, 'creator-2');
    devnet.blocks.pause();
    const before = devnet.chain.balanceOf(creator.address);
    const running = gwctl(
      devnet,
      ['escrow', 'create', '--amount', '5000000000', '--model', QWEN_MODEL, ...cliWait(UNTIL_INCLUDED)],
      { key: creator.key },
    );
    await waitFor(() => devnet.core.blocks.mempoolSize === 1);
    // Governance takes the creator off the allowlist between CheckTx and the block.
    devnet.faults.set({ removedCreators: [creator.address] });
    const height = devnet.blocks.step();
    const run = await running;
    expect(run.code).toBe(1);
    const hash = /^tx_hash: ([0-9A-F]{64})\n$/.exec(run.stdout)![1]!;
    expect(errorLine(run)).toMatch(
      new RegExp(
        `^gwctl: tx ${hash} failed in block ${height} \\(fee charged\\): code 1170 inference: .*allowlist`,
      ),
    );
    expect(before - devnet.chain.balanceOf(creator.address)).toBe(7_000_000n);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
