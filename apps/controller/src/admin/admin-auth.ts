// Admin authentication and the audit log (spec §5.1.2). Every route registered inside
// this plugin needs `Authorization: Bearer <DEVSHARD_ADMIN_API_KEY>`: the presented key is hashed
// and compared with the configured digest in constant time (matchesKeyHash), so neither its length
// nor a prefix leaks through timing. Wrong or missing → 401 in the OpenAI error shape. Every
// mutating call (anything but GET/HEAD) is written to admin_audit_log as it is answered, with the key's
// fingerprint as the actor and the body stripped of secrets.
import { createHash } from 'node:crypto';
import { GatewayError, matchesKeyHash } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Sql } from 'postgres';
import { redactSecrets } from './redact.js';

export interface AdminAuthOptions {
  adminKeyHash: Buffer;
  sql: Sql;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** `admin:<first 12 hex of the key digest>`, or `anonymous` before/without authentication. */
    adminActor?: string;
  }
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** A stable, non-reversible id of the presented key for the audit log (never the key itself). */
export function keyFingerprint(key: string): string {
  return `admin:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12)}`;
}

/** Installs the admin check and the audit hook on the encapsulated context it is registered in. */
export async function adminAuth(app: FastifyInstance, options: AdminAuthOptions): Promise<void> {
  app.addHook('onRequest', async (request) => {
    const key = bearer(request);
    if (key === undefined) {
      request.adminActor = 'anonymous';
      throw new GatewayError(
        'missing_api_key',
        'missing admin API key: send Authorization: Bearer <admin key>',
      );
    }
    if (!matchesKeyHash(key, [options.adminKeyHash])) {
      request.adminActor = 'anonymous';
      throw new GatewayError('invalid_api_key', 'invalid admin API key');
    }
    request.adminActor = keyFingerprint(key);
  });

  // onSend, not onResponse: the row is written before the answer leaves, so a client (or test)
  // that got the answer can read its audit row.
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.method === 'GET' || request.method === 'HEAD') return payload;
    const params = (request.params ?? {}) as Record<string, unknown>;
    const target = typeof params.id === 'string' ? params.id : null;
    const body = request.body === undefined ? null : redactSecrets(request.body);
    try {
      await options.sql`
        insert into admin_audit_log (actor, action, target, request, status_code)
        values (${request.adminActor ?? 'anonymous'}, ${`${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]}`},
                ${target}, ${body === null ? null : options.sql.json(body as never)}, ${reply.statusCode})`;
    } catch (err) {
      request.log.error({ err }, 'admin audit log write failed');
    }
    return payload;
  });
}
