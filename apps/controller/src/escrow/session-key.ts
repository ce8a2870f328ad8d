// The creator key that signs an escrow's diffs when the controller opens its session (finalize):
// escrows.signer_key_env, else the encrypted key (GATEWAY_ENCRYPTION_KEY), else the gateway's
// default DEVSHARD_PRIVATE_KEY. Errors name the source, never the value.
import { DEFAULT_PRIVATE_KEY_ENV, PrivateKey, privateKeyFromEnv } from '@gonka-gateway/chain';
import { GatewayError, openSecret } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';

export async function sessionKeyOf(ctx: ControllerContext, escrowId: bigint): Promise<PrivateKey> {
  const [row] = await ctx.sql<{ signer_key_env: string | null; signer_key_encrypted: Buffer | null }[]>`
    select signer_key_env, signer_key_encrypted from escrows where escrow_id = ${escrowId.toString()}::numeric`;
  if (!row)
    throw new GatewayError('escrow_not_found', `escrow ${escrowId} is not registered`, { param: 'id' });
  if (row.signer_key_encrypted) {
    if (!ctx.encryptionKey) {
      throw new GatewayError(
        'service_unavailable',
        `escrow ${escrowId}: its creator key is stored encrypted and GATEWAY_ENCRYPTION_KEY is not set`,
      );
    }
    return PrivateKey.fromBytes(openSecret(ctx.encryptionKey, new Uint8Array(row.signer_key_encrypted)));
  }
  try {
    return privateKeyFromEnv(ctx.env, row.signer_key_env ?? DEFAULT_PRIVATE_KEY_ENV);
  } catch (err) {
    throw new GatewayError('service_unavailable', `escrow ${escrowId}: ${(err as Error).message}`);
  }
}
