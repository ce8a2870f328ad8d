// Who is calling (spec §5.1): the admin key, a user key from DEVSHARD_API_KEYS, or a stored key
// (issue 14, gate/key-directory.ts), as SHA-256 digests compared in constant time (packages/shared
// config/api-keys.ts). Runs onRequest, before any body is read; routes decide what each caller may do.

import { timingSafeEqual } from 'node:crypto';
import { hashApiKey, matchesKeyHash } from '@gonka-gateway/shared';
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

export function identify(request: FastifyRequest, options: AuthOptions): Caller {
  const header = request.headers.authorization;
  if (header === undefined || header === '') return ANONYMOUS;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) return INVALID;
  const key = match[1]!;
  const digest = hashApiKey(key);
  if (timingSafeEqual(digest, options.adminKeyHash)) return ADMIN;
  if (matchesKeyHash(key, options.userKeyHashes)) return { kind: 'user', keyId: 'env' };
  let stored: StoredKey | undefined;
  // Every stored digest is compared, so timing does not tell which matched.
  for (const k of options.keys.keys) if (timingSafeEqual(digest, k.hash)) stored = k;
  return stored === undefined ? INVALID : { kind: 'user', keyId: `key-${stored.id}`, stored };
}

/** A well-formed user key that matched nothing may have been created a moment ago: read once more. */
async function identifyOrReload(request: FastifyRequest, options: AuthOptions): Promise<Caller> {
  const caller = identify(request, options);
  if (
    caller.kind !== 'invalid' ||
    !/^Bearer\s+sk-[0-9a-f]{48}\s*$/i.test(request.headers.authorization ?? '')
  ) {
    return caller;
  }
  const reloaded = await options.keys.reloadAfterMiss().catch(() => false);
  return reloaded ? identify(request, options) : caller;
}

export const authentication = fp(
  async (app: FastifyInstance, options: AuthOptions) => {
    app.decorateRequest('caller', null as never);
    app.addHook('onRequest', async (request) => {
      request.caller = await identifyOrReload(request, options);
    });
  },
  { name: 'authentication' },
);
