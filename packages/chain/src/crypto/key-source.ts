// Loading a private key the only two ways the gateway and gwctl accept (gateway-spec.md §5.1.6,
// §2.10): from an environment variable named by the caller, or from a file. Never from a command-line
// value, which leaks into shell history and `ps`. Errors name the variable or file, never the value.
import { readFile, stat } from 'node:fs/promises';
import { ChainError } from '../errors.js';
import { PrivateKey } from './private-key.js';

export const DEFAULT_PRIVATE_KEY_ENV = 'DEVSHARD_PRIVATE_KEY';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEX_KEY = /^(0x)?[0-9a-fA-F]{64}$/;

/** True when `value` has the shape of a hex private key (to refuse it where a name is expected). */
export function looksLikePrivateKey(value: string): boolean {
  return HEX_KEY.test(value.trim());
}

export function privateKeyFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  name = DEFAULT_PRIVATE_KEY_ENV,
): PrivateKey {
  if (looksLikePrivateKey(name)) {
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', {
      detail:
        'the value given as an environment variable NAME looks like a private key; pass the name of the variable that holds it',
    });
  }
  if (!ENV_NAME.test(name))
    // Not echoed: a mis-pasted mnemonic or key must not reach the terminal or logs.
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', {
      detail: 'the private key variable name is not a valid environment variable name',
    });
  const value = env[name];
  if (value === undefined || value.trim() === '') {
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', { detail: `environment variable ${name} is not set` });
  }
  try {
    return PrivateKey.fromHex(value);
  } catch (err) {
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', { detail: `${name}: ${(err as Error).message}` });
  }
}

/**
 * A key from file text: either the bare hex key, or an env file (as written by `gwctl keys new`)
 * holding a `<variable>=<hex>` line.
 */
export function privateKeyFromFileText(text: string, variable = DEFAULT_PRIVATE_KEY_ENV): PrivateKey {
  const trimmed = text.trim();
  let hex: string | undefined;
  if (looksLikePrivateKey(trimmed)) hex = trimmed;
  else {
    for (const line of trimmed.split(/\r?\n/)) {
      const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*["']?([^"'\s]*)["']?\s*$/.exec(line);
      if (m && m[1] === variable) hex = m[2];
    }
  }
  if (hex === undefined) {
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', {
      detail: `file holds neither a hex key nor a ${variable}= line`,
    });
  }
  return PrivateKey.fromHex(hex);
}

export interface KeyFileOptions {
  variable?: string;
  /** Called when the file is readable by group or others (the key is still loaded). */
  onInsecurePermissions?: (mode: number) => void;
}

export async function privateKeyFromFile(path: string, options: KeyFileOptions = {}): Promise<PrivateKey> {
  let text: string;
  try {
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) options.onInsecurePermissions?.(info.mode & 0o777);
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'read error';
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', { detail: `cannot read key file ${path} (${code})` });
  }
  try {
    return privateKeyFromFileText(text, options.variable);
  } catch (err) {
    if (err instanceof ChainError)
      throw new ChainError('CHAIN_ERR_KEY_SOURCE', { detail: `${path}: ${err.detail}` });
    throw new ChainError('CHAIN_ERR_KEY_SOURCE', { detail: `${path}: ${(err as Error).message}` });
  }
}
