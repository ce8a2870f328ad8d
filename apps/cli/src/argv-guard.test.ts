import { describe, expect, it } from 'vitest';
import { gwctl, TEST_ADDRESS, TEST_KEY } from './testing/cli-harness.js';

const MNEMONIC =
  'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';

describe('private keys are accepted only from an env variable or a file', () => {
  const refused = [
    ['address', '--private-key', TEST_KEY],
    ['address', `--private-key=${TEST_KEY}`],
    ['address', '--key', `0x${TEST_KEY}`],
    ['sign-request', '--mnemonic', MNEMONIC],
    ['address', TEST_KEY],
    ['balance', `0x${TEST_KEY}`],
    ['address', '--private-key-env', TEST_KEY],
    ['address', `--private-key-env=${TEST_KEY.toUpperCase()}`],
    ['address', '--private-key-file', TEST_KEY],
    [TEST_KEY],
    ['address', MNEMONIC],
  ];

  for (const argv of refused) {
    it(`refuses ${argv.map((a) => (a.length > 20 ? `${a.slice(0, 10)}…` : a)).join(' ')}`, async () => {
      const run = await gwctl(argv, { env: { DEVSHARD_PRIVATE_KEY: TEST_KEY } });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/--private-key-env NAME.*--private-key-file PATH/);
      expect(run.stderr.toLowerCase()).not.toContain(TEST_KEY.slice(0, 16));
      expect(run.stderr).not.toContain('abandon');
      expect(run.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    });
  }

  it('accepts the key from the named env variable', async () => {
    const run = await gwctl(['address', '--private-key-env', 'MY_KEY'], { env: { MY_KEY: TEST_KEY } });
    expect(run).toMatchObject({ code: 0, stdout: `${TEST_ADDRESS}\n` });
  });

  it('reports a missing variable by name in one line, exit 1', async () => {
    const run = await gwctl(['address']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'gwctl: private key not loaded: environment variable DEVSHARD_PRIVATE_KEY is not set [CHAIN_ERR_KEY_SOURCE]\n',
    );
  });

  it('still lets a 64-hex tx hash through --tx', async () => {
    const run = await gwctl([
      'escrow',
      'settle-status',
      '1',
      '--tx',
      'AB'.repeat(32),
      '--chain-rest',
      'http://127.0.0.1:9',
      '--timeout-ms',
      '500',
    ]);
    expect(run.stderr).not.toMatch(/never from the command line/);
    expect(run.code).toBe(1);
  });

  it('refuses a lower-case or env-held key where a tx hash is expected', async () => {
    for (const argv of [
      ['tx', 'status', TEST_KEY],
      ['tx', 'status', TEST_KEY.toUpperCase()],
      ['escrow', 'settle-status', '1', '--tx', TEST_KEY],
    ]) {
      const run = await gwctl(argv, { env: { DEVSHARD_PRIVATE_KEY: TEST_KEY } });
      expect(run.code).toBe(2);
      expect(run.stderr.toLowerCase()).not.toContain(TEST_KEY.slice(0, 16));
    }
  });

  it('does not echo a key-shaped value commander would quote back', async () => {
    const run = await gwctl(['escrow', 'show', '--frobnicate', `${TEST_KEY}zz`]);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toContain(TEST_KEY.slice(0, 16));
  });
});
