import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrivateKey } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gwctl } from '../testing/cli-harness.js';

const LINE = {
  DEVSHARD_PRIVATE_KEY: /^DEVSHARD_PRIVATE_KEY=([0-9a-f]{64})$/m,
  DEVSHARD_CREATOR: /^DEVSHARD_CREATOR=(gonka1[02-9ac-hj-np-z]{38})$/m,
  DEVSHARD_API_KEYS: /^DEVSHARD_API_KEYS=(sk-[0-9a-f]{48})$/m,
  DEVSHARD_ADMIN_API_KEY: /^DEVSHARD_ADMIN_API_KEY=(sk-admin-[0-9a-f]{48})$/m,
};

describe('gwctl keys new', () => {
  it('prints KEY=value lines for an env file; comments for everything else', async () => {
    const run = await gwctl(['keys', 'new']);
    expect(run.code).toBe(0);
    const values = Object.fromEntries(Object.entries(LINE).map(([k, re]) => [k, re.exec(run.stdout)?.[1]]));
    for (const [k, v] of Object.entries(values)) expect(v, k).toBeDefined();
    for (const line of run.stdout.trim().split('\n')) expect(line).toMatch(/^(#.*|[A-Z_]+=\S+)$/);
    expect(PrivateKey.fromHex(values.DEVSHARD_PRIVATE_KEY!).address).toBe(values.DEVSHARD_CREATOR);
    expect(run.stdout).toContain(
      `# Creator address (must be on devshard_escrow_params.allowed_creator_addresses): ${values.DEVSHARD_CREATOR}`,
    );
    expect(run.stdout).not.toMatch(/=0x/i);
  });

  it('never repeats a key across runs', async () => {
    const runs = await Promise.all(Array.from({ length: 8 }, () => gwctl(['keys', 'new', '--json'])));
    const parsed = runs.map((r) => JSON.parse(r.stdout) as Record<string, string>);
    for (const field of ['DEVSHARD_PRIVATE_KEY', 'DEVSHARD_API_KEYS', 'DEVSHARD_ADMIN_API_KEY']) {
      expect(new Set(parsed.map((p) => p[field])).size).toBe(8);
    }
  });

  describe('--out', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'gwctl-keys-'));
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it('writes a mode-600 env file, prints only the address, and never overwrites', async () => {
      const file = join(dir, 'gateway.env');
      const run = await gwctl(['keys', 'new', '--out', file]);
      expect(run.code).toBe(0);
      expect(run.stdout).not.toMatch(/sk-|DEVSHARD_PRIVATE_KEY/);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const text = await readFile(file, 'utf8');
      expect(LINE.DEVSHARD_PRIVATE_KEY.test(text)).toBe(true);
      const again = await gwctl(['keys', 'new', '--out', file]);
      expect(again.code).toBe(1);
      expect(await readFile(file, 'utf8')).toBe(text);
      // The file feeds --private-key-file directly.
      const address = await gwctl(['address', '--private-key-file', file]);
      expect(address.stdout.trim()).toBe(LINE.DEVSHARD_CREATOR.exec(text)![1]);
    });
  });
});
