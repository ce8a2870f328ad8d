import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isChainError } from '../errors.js';
import {
  looksLikePrivateKey,
  privateKeyFromEnv,
  privateKeyFromFile,
  privateKeyFromFileText,
} from './key-source.js';

const KEY = '10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce';
const ADDRESS = 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw';

function caught(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}

describe('privateKeyFromEnv', () => {
  it('reads the named variable, with or without 0x', () => {
    expect(privateKeyFromEnv({ DEVSHARD_PRIVATE_KEY: KEY }).address).toBe(ADDRESS);
    expect(privateKeyFromEnv({ OTHER: `0x${KEY}` }, 'OTHER').address).toBe(ADDRESS);
  });

  it('names a missing variable but never echoes a key passed where the name belongs', () => {
    const missing = caught(() => privateKeyFromEnv({}, 'GATEWAY_KEY'));
    expect(isChainError(missing, 'CHAIN_ERR_KEY_SOURCE')).toBe(true);
    expect(missing.message).toContain('GATEWAY_KEY');
    const keyAsName = caught(() => privateKeyFromEnv({ [KEY]: KEY }, KEY));
    expect(keyAsName.message).not.toContain(KEY.slice(0, 12));
    const mnemonicAsName = caught(() => privateKeyFromEnv({}, 'abandon abandon about'));
    expect(mnemonicAsName.message).not.toContain('abandon');
  });

  it('does not echo a malformed key value', () => {
    const err = caught(() => privateKeyFromEnv({ K: `${KEY.slice(0, 60)}zzzz` }, 'K'));
    expect(err.message).not.toContain(KEY.slice(0, 12));
  });

  it('recognises key-shaped values', () => {
    expect(looksLikePrivateKey(KEY)).toBe(true);
    expect(looksLikePrivateKey(`0x${KEY}`)).toBe(true);
    expect(looksLikePrivateKey('DEVSHARD_PRIVATE_KEY')).toBe(false);
  });
});

describe('key files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-key-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a bare hex file or an env file line', async () => {
    expect(privateKeyFromFileText(`${KEY}\n`).address).toBe(ADDRESS);
    const env = `# generated\nDEVSHARD_API_KEYS=sk-abc\nDEVSHARD_PRIVATE_KEY=${KEY}\n`;
    expect(privateKeyFromFileText(env).address).toBe(ADDRESS);
    expect(privateKeyFromFileText(`export MY_KEY="${KEY}"`, 'MY_KEY').address).toBe(ADDRESS);
    expect(() => privateKeyFromFileText('nothing here')).toThrow(/DEVSHARD_PRIVATE_KEY= line/);
  });

  it('loads from disk, reports loose permissions and never prints the contents', async () => {
    const path = join(dir, 'key.env');
    await writeFile(path, `DEVSHARD_PRIVATE_KEY=${KEY}\n`);
    await chmod(path, 0o644);
    const modes: number[] = [];
    const key = await privateKeyFromFile(path, { onInsecurePermissions: (m) => modes.push(m) });
    expect(key.address).toBe(ADDRESS);
    expect(modes).toEqual([0o644]);
    await chmod(path, 0o600);
    await privateKeyFromFile(path, { onInsecurePermissions: (m) => modes.push(m) });
    expect(modes).toHaveLength(1);

    const bad = join(dir, 'bad.env');
    await writeFile(bad, `DEVSHARD_PRIVATE_KEY=${KEY.slice(0, 40)}\n`);
    await expect(privateKeyFromFile(bad)).rejects.toSatisfy(
      (e: Error) => isChainError(e, 'CHAIN_ERR_KEY_SOURCE') && !e.message.includes(KEY.slice(0, 12)),
    );
    await expect(privateKeyFromFile(join(dir, 'absent'))).rejects.toThrow(/ENOENT/);
  });
});
