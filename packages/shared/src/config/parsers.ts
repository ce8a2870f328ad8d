// Small parsers for configuration values. Each returns the parsed value or throws a ConfigValueError
// whose message describes the problem without ever repeating the value (it may be a secret).
import { MAX_PASSTHROUGH_PARAMETERS, PARAMETER_NAME } from '../chat-parameters.js';

export class ConfigValueError extends Error {}

export function nonNegativeInt(raw: string): number {
  if (!/^\d+$/.test(raw.trim())) throw new ConfigValueError('must be a non-negative integer');
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n)) throw new ConfigValueError('is too large');
  return n;
}

export function positiveInt(raw: string): number {
  const n = nonNegativeInt(raw);
  if (n === 0) throw new ConfigValueError('must be a positive integer');
  return n;
}

export function port(raw: string): number {
  const n = nonNegativeInt(raw);
  if (n > 65535) throw new ConfigValueError('must be a TCP port (0-65535)');
  return n;
}

/** Canonical decimal uint64: the form escrow ids are hashed and signed in. */
export function uint64(raw: string): bigint {
  const t = raw.trim();
  if (!/^(0|[1-9]\d*)$/.test(t))
    throw new ConfigValueError('must be a decimal integer without sign or leading zeros');
  const v = BigInt(t);
  if (v > 0xffff_ffff_ffff_ffffn) throw new ConfigValueError('is larger than uint64');
  return v;
}

export function onOff(raw: string): boolean {
  const t = raw.trim().toLowerCase();
  if (['on', 'true', '1', 'yes'].includes(t)) return true;
  if (['off', 'false', '0', 'no'].includes(t)) return false;
  throw new ConfigValueError('must be on or off (also true/false, 1/0)');
}

export function oneOf<T extends string>(values: readonly T[]) {
  return (raw: string): T => {
    const t = raw.trim().toLowerCase();
    const found = values.find((v) => v === t);
    if (!found) throw new ConfigValueError(`must be one of: ${values.join(', ')}`);
    return found;
  };
}

export function httpUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigValueError('must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigValueError('must be an absolute http(s) URL');
  }
  return raw.trim().replace(/\/+$/, '');
}

export function urlWithScheme(schemes: readonly string[]) {
  return (raw: string): string => {
    let url: URL;
    try {
      url = new URL(raw.trim());
    } catch {
      throw new ConfigValueError(`must be a ${schemes.join(' or ')} URL`);
    }
    if (!schemes.includes(url.protocol.replace(/:$/, ''))) {
      throw new ConfigValueError(`must be a ${schemes.join(' or ')} URL`);
    }
    return raw.trim();
  };
}

export function nonEmpty(raw: string): string {
  const t = raw.trim();
  if (t === '') throw new ConfigValueError('must not be empty');
  return t;
}

/** Lower-case hex of exactly `bytes` bytes, no 0x (the spec's form for DEVSHARD_PRIVATE_KEY). */
export function hexBytes(bytes: number) {
  return (raw: string): string => {
    const t = raw.trim();
    if (/^0x/i.test(t)) throw new ConfigValueError(`must be ${bytes * 2} hex characters without a 0x prefix`);
    if (!new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`).test(t)) {
      throw new ConfigValueError(`must be ${bytes * 2} hex characters`);
    }
    return t.toLowerCase();
  };
}

/**
 * Names of top-level request parameters, separated by commas or spaces (snake_case, as OpenAI's
 * and vLLM's parameters are spelled); empty means none.
 */
export function parameterNames(raw: string): string[] {
  const names = raw.split(/[\s,]+/).filter((n) => n !== '');
  for (const name of names) {
    if (!PARAMETER_NAME.test(name)) {
      throw new ConfigValueError('must list parameter names (a-z, 0-9 and _, at most 64 characters each)');
    }
  }
  if (names.length > MAX_PASSTHROUGH_PARAMETERS) {
    throw new ConfigValueError(`must list at most ${MAX_PASSTHROUGH_PARAMETERS} names`);
  }
  return [...new Set(names)];
}
