import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gwctl, PROVIDER, TEST_ADDRESS, TEST_KEY } from '../testing/cli-harness.js';
import { type FakeNetwork, startFakeNetwork } from '../testing/fake-network.js';

let net: FakeNetwork;
beforeEach(async () => {
  net = await startFakeNetwork();
});
afterEach(() => net.close());

const env = () => ({
  DEVSHARD_PRIVATE_KEY: TEST_KEY,
  DEVSHARD_CHAIN_REST: net.url,
  DEVSHARD_PUBLIC_API: net.url,
});
const FAST = ['--poll-interval-ms', '20', '--wait-timeout-ms', '300'];
const create = [
  'escrow',
  'create',
  '--amount',
  '5000000000',
  '--model',
  'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
  ...FAST,
];

describe('gwctl escrow create', () => {
  it('prints the tx hash first, waits with progress on stderr, then prints the escrow id', async () => {
    const run = await gwctl(create, { env: env() });
    expect(run.code).toBe(0);
    const [first, second] = run.stdout.trim().split('\n');
    expect(first).toMatch(/^tx_hash: [0-9A-F]{64}$/);
    expect(second).toBe('escrow_id: 41');
    expect(run.stderr).toMatch(/fee 7000000 ngonka/);
    expect(run.stderr).toMatch(/broadcast: accepted/);
    const hash = first!.slice('tx_hash: '.length);
    expect(net.state.txs.has(hash)).toBe(true);
    expect(run.stdout + run.stderr).not.toContain(TEST_KEY);
  });

  it('--json emits the prepared line then the result line', async () => {
    const run = await gwctl(['--json', ...create], { env: env() });
    const [prepared, result] = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(prepared).toMatchObject({ fee: '7000000', gas_limit: '700000' });
    expect(result).toEqual({ status: 'included', tx_hash: prepared.tx_hash, height: '500', escrow_id: '41' });
  });

  it('refuses before signing anything away when the creator is not allowlisted or the amount is out of range', async () => {
    net.state.allowedCreators = [PROVIDER];
    const run = await gwctl(create, { env: env() });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/not sent: .*allowed_creator_addresses/);
    const low = await gwctl(
      ['escrow', 'create', '--amount', '1', '--model', 'm', '--skip-checks', '--dry-run'],
      { env: env() },
    );
    expect(low.code).toBe(0);
    expect(net.requests.some((r) => r.method === 'POST')).toBe(false);
  });

  it('a broadcast whose connection dropped after the chain took the tx still resolves by polling', async () => {
    net.state.broadcast = 'commit-then-drop';
    const run = await gwctl(create, { env: env() });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/broadcast: no answer/);
    expect(run.stdout).toMatch(/escrow_id: 41/);
  });

  it('a dropped broadcast that never landed is unknown (exit 3), never failed; the hash was printed first', async () => {
    net.state.broadcast = 'drop';
    const run = await gwctl(create, { env: env() });
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/^tx_hash: [0-9A-F]{64}\n$/);
    expect(run.stderr).toMatch(/outcome unknown .*gwctl tx status [0-9A-F]{64}/);
  });

  it('a CheckTx refusal is a failure with code and log, exit 1', async () => {
    net.state.broadcast = 'refuse';
    const run = await gwctl(create, { env: env() });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/refused at broadcast \(no fee charged\): code 5 sdk: insufficient funds/);
  });
});

describe('gwctl escrow show / settle-status, tx status', () => {
  it('shows a created escrow and reports a missing one', async () => {
    await gwctl(create, { env: env() });
    const shown = await gwctl(['escrow', 'show', '41'], { env: env() });
    expect(shown.stdout).toMatch(/amount\s+5000000000 ngonka \(5 GNK\)/);
    const json = JSON.parse((await gwctl(['--json', 'escrow', 'show', '41'], { env: env() })).stdout);
    expect(json).toMatchObject({ id: '41', creator: TEST_ADDRESS, amount: '5000000000', settled: false });
    expect(json.raw).toBeUndefined();
    const missing = await gwctl(['escrow', 'show', '99'], { env: env() });
    expect(missing).toMatchObject({ code: 1, stderr: 'gwctl: escrow 99 not found\n' });
  });

  it('settle-status reports the window from the current epoch', async () => {
    await gwctl(create, { env: env() });
    const open = JSON.parse(
      (await gwctl(['--json', 'escrow', 'settle-status', '41'], { env: env() })).stdout,
    );
    expect(open).toMatchObject({
      settled: false,
      epoch_index: '42',
      current_epoch: '42',
      settle_window: 'open',
      settle_by_epoch: '43',
    });
    net.state.currentEpoch = 44n;
    const closed = JSON.parse(
      (await gwctl(['--json', 'escrow', 'settle-status', '41'], { env: env() })).stdout,
    );
    expect(closed.settle_window).toBe('closed');
  });

  it('tx status finds a committed tx and reports an unknown one with exit 3', async () => {
    const hash = (await gwctl(create, { env: env() })).stdout.split('\n')[0]!.slice('tx_hash: '.length);
    const found = await gwctl(['tx', 'status', hash], { env: env() });
    expect(found.code).toBe(0);
    expect(found.stdout).toMatch(/status\s+included/);
    const unknown = await gwctl(['tx', 'status', 'E'.repeat(64)], { env: env() });
    expect(unknown.code).toBe(3);
  });
});

describe('gwctl publish-pubkey, balance, params', () => {
  it('publishes once, then reports it is already published', async () => {
    const first = await gwctl(['publish-pubkey', ...FAST], { env: env() });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^tx_hash: [0-9A-F]{64}\npublished at height 500\n$/);
    const second = await gwctl(['publish-pubkey'], { env: env() });
    expect(second).toMatchObject({ code: 0, stdout: `public key of ${TEST_ADDRESS} is already published\n` });
  });

  it('balance of the key address or of a given address', async () => {
    expect((await gwctl(['balance'], { env: env() })).stdout).toBe(
      `${TEST_ADDRESS}: 20000000000 ngonka (20 GNK)\n`,
    );
    const json = JSON.parse((await gwctl(['--json', 'balance', PROVIDER], { env: env() })).stdout);
    expect(json).toMatchObject({ address: PROVIDER, denom: 'ngonka', amount: '20000000000' });
  });

  it('params prints the escrow limits and the current create-escrow fee', async () => {
    const run = await gwctl(['params', '--chain-rest', net.url], {});
    expect(run.stdout).toMatch(/min_amount\s+5000000000 ngonka \(5 GNK\)/);
    expect(run.stdout).toContain('create-escrow fee now: 7000000 ngonka (0.007 GNK) at gas limit 700000');
    const json = JSON.parse((await gwctl(['--json', 'params'], { env: env() })).stdout);
    expect(json.devshardEscrow.maxNonce).toBe('1000000');
  });
});
