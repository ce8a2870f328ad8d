// The creator key fields of an admin request (spec §5.1.6): `private_key_env` (preferred: the NAME
// of a variable of the controller's environment) or `private_key` in the body, which is accepted
// only when GATEWAY_ENCRYPTION_KEY is set, because it is then kept AES-256-GCM encrypted. Errors
// name the field, never the value. A key stored this way is opened later by the one creator-key
// resolver (escrow-runtime creator-key.ts), as the owners open it.
import { ChainError, PrivateKey, privateKeyFromEnv } from '@gonka-gateway/chain';
import { GatewayError, sealSecret } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import type { KeySource } from './register.js';

export interface KeyFields {
  private_key?: string;
  private_key_env?: string;
}

export function resolveCreatorKey(
  ctx: ControllerContext,
  body: KeyFields,
): { key: PrivateKey; source: KeySource } {
  if (body.private_key !== undefined && body.private_key_env !== undefined) {
    throw new GatewayError('invalid_request', 'give either private_key or private_key_env, not both', {
      param: 'private_key',
    });
  }
  if (body.private_key_env !== undefined) {
    try {
      return { key: privateKeyFromEnv(ctx.env, body.private_key_env), source: { env: body.private_key_env } };
    } catch (err) {
      const detail =
        err instanceof ChainError ? (err.detail ?? err.message) : 'the variable does not hold a private key';
      throw new GatewayError('invalid_request', `private_key_env: ${detail}`, { param: 'private_key_env' });
    }
  }
  if (body.private_key !== undefined) {
    if (!ctx.encryptionKey) {
      throw new GatewayError(
        'invalid_request',
        'private_key in a request body needs GATEWAY_ENCRYPTION_KEY on the controller (it is stored encrypted); set it, or name a variable with private_key_env',
        { param: 'private_key' },
      );
    }
    let key: PrivateKey;
    try {
      key = PrivateKey.fromHex(body.private_key);
    } catch (err) {
      throw new GatewayError('invalid_request', `private_key: ${(err as Error).message}`, {
        param: 'private_key',
      });
    }
    // The exported copy exists only to be sealed: wiped once it is.
    const plain = key.exportBytes();
    try {
      return { key, source: { sealed: sealSecret(ctx.encryptionKey, plain) } };
    } finally {
      plain.fill(0);
    }
  }
  throw new GatewayError('invalid_request', 'private_key_env (preferred) or private_key is required', {
    param: 'private_key_env',
  });
}
