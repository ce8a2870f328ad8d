// Who is calling (spec §5.1): the admin key, a user key from DEVSHARD_API_KEYS, or a stored key
// (gate/key-directory.ts), as SHA-256 digests compared in constant time (packages/shared
// config/api-keys.ts). Runs onRequest, before any body is read; routes decide what each caller may do.

import { timingSafeEqual } from 'node:crypto';
import { hashApiKey, matchesDigest } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { KeyDirectory, StoredKey } from './key-directory.js';

export type Caller =
  | { readonly kind: 'admin'; readonly keyId: 'admin' }
  | { readonly kind: 'user'; readonly keyId: string; readonly stored?: StoredKey }
  | { readonly kind: 'anonymous' }
  | { readonly kind: 'invalid' };

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

export interface AuthOptions {
  readonly adminKeyHash: Buffer;
  readonly userKeyHashes: readonly Buffer[];
  readonly keys: Pick<KeyDirectory, 'keys' | 'reloadAfterMiss'>;
}

const ANONYMOUS: Caller = { kind: 'anonymous' };
const INVALID: Caller = { kind: 'invalid' };
const ADMIN: Caller = { kind: 'admin', keyId: 'admin' };
const ENV_USER: Caller = { kind: 'user', keyId: 'env' };

/**
 * SHA-256 digests of the keys presented lately, by key: a client sends the same key on every
 * request, and hashing it each time is a measurable share of a request. Only the digest is
 * looked up this way: what it is compared with is still compared in constant time. Bounded, oldest
 * first out, so a flood of wrong keys costs the memory of DIGESTS_KEPT entries at most. The keys sit
 * in this process's memory as they do in its request headers; they are never logged.
 */
export const DIGESTS_KEPT = 1024;

export class KeyDigests {
  readonly #byKey = new Map<string, Buffer>();

  get size(): number {
    return this.#byKey.size;
  }

  of(key: string): Buffer {
    let digest = this.#byKey.get(key);
    if (digest === undefined) {
      digest = hashApiKey(key);
      if (this.#byKey.size >= DIGESTS_KEPT) this.#byKey.delete(this.#byKey.keys().next().value!);
      this.#byKey.set(key, digest);
    }
    return digest;
  }
}

export function identify(request: FastifyRequest, options: AuthOptions, digests: KeyDigests): Caller {
  const header = request.headers.authorization;
  if (header === undefined || header === '') return ANONYMOUS;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) return INVALID;
  const digest = digests.of(match[1]!);
  if (timingSafeEqual(digest, options.adminKeyHash)) return ADMIN;
  if (matchesDigest(digest, options.userKeyHashes)) return ENV_USER;
  let stored: StoredKey | undefined;
  // Every stored digest is compared, so timing does not tell which matched.
  for (const k of options.keys.keys) if (timingSafeEqual(digest, k.hash)) stored = k;
  return stored === undefined ? INVALID : { kind: 'user', keyId: `key-${stored.id}`, stored };
}

/** A well-formed user key that matched nothing may have been created a moment ago: read once more. */
function mayBeNewKey(request: FastifyRequest): boolean {
  return /^Bearer\s+sk-[0-9a-f]{48}\s*$/i.test(request.headers.authorization ?? '');
}

export const authentication = fp(
  async (app: FastifyInstance, options: AuthOptions) => {
    const digests = new KeyDigests();
    app.decorateRequest('caller', null as never);
    // A callback hook: the usual request (a known key) is decided without a promise.
    app.addHook('onRequest', (request, _reply, done) => {
      const caller = identify(request, options, digests);
      request.caller = caller;
      if (caller.kind !== 'invalid' || !mayBeNewKey(request)) return done();
      options.keys.reloadAfterMiss().then(
        (reloaded) => {
          if (reloaded) request.caller = identify(request, options, digests);
          done();
        },
        () => done(),
      );
    });
  },
  { name: 'authentication' },
);
