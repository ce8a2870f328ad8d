import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigValueError } from './parsers.js';

// Keys are kept only as SHA-256 digests: the process never holds a configured plain key after
// start-up (the proxy keeps the digests of presented keys by key, apps/proxy gate/auth.ts), and
// comparing fixed-length digests with timingSafeEqual is constant-time whatever the input length.

export const USER_KEY_PATTERN = /^sk-[A-Za-z0-9_-]{16,200}$/;
export const ADMIN_KEY_PATTERN = /^sk-admin-[A-Za-z0-9_-]{16,200}$/;

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Constant-time membership test of a presented key against stored digests. */
export function matchesKeyHash(presented: string, hashes: readonly Buffer[]): boolean {
  return matchesDigest(hashApiKey(presented), hashes);
}

/** matchesKeyHash for a key already hashed. */
export function matchesDigest(digest: Buffer, hashes: readonly Buffer[]): boolean {
  let found = false;
  // Compare against every hash so timing does not reveal which (or whether an early) entry matched.
  for (const h of hashes) if (timingSafeEqual(digest, h)) found = true;
  return found;
}

/** DEVSHARD_API_KEYS: one or more `sk-…` keys separated by commas (whitespace around commas ignored). */
export function parseUserKeys(raw: string): Buffer[] {
  const keys = raw
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  keys.forEach((key, i) => {
    if (key.startsWith('sk-admin-')) {
      throw new ConfigValueError(`entry ${i + 1} is an admin key; user keys must not start with sk-admin-`);
    }
    if (!USER_KEY_PATTERN.test(key)) {
      throw new ConfigValueError(
        `entry ${i + 1} must be sk- followed by at least 16 letters, digits, - or _`,
      );
    }
  });
  return keys.map(hashApiKey);
}

export function parseAdminKey(raw: string): Buffer {
  const key = raw.trim();
  if (!key.startsWith('sk-admin-')) throw new ConfigValueError('must start with sk-admin-');
  if (!ADMIN_KEY_PATTERN.test(key)) {
    throw new ConfigValueError('must be sk-admin- followed by at least 16 letters, digits, - or _');
  }
  return hashApiKey(key);
}
