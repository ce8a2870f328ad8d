// Who is calling (spec §5.1): the admin key, a user key from DEVSHARD_API_KEYS, or a stored key, as
// SHA-256 digests compared in constant time (packages/shared config/api-keys.ts). Runs onRequest,
// before any body is read; routes decide what each caller may do.

import { timingSafeEqual } from 'node:crypto';
import { hashApiKey, matchesKeyHash } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { SettingsSource } from './settings.js';

export type Caller =
  | { readonly kind: 'admin'; readonly keyId: 'admin' }
  | { readonly kind: 'user'; readonly keyId: string }
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
  readonly settings: SettingsSource;
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
  let stored: string | undefined;
  // Every stored digest is compared, so timing does not tell which matched.
  for (const k of options.settings.storedKeys) if (timingSafeEqual(digest, k.hash)) stored = k.id;
  return stored === undefined ? INVALID : { kind: 'user', keyId: `key-${stored}` };
}

export const authentication = fp(
  async (app: FastifyInstance, options: AuthOptions) => {
    app.decorateRequest('caller', null as never);
    app.addHook('onRequest', async (request) => {
      request.caller = identify(request, options);
    });
  },
  { name: 'authentication' },
);
