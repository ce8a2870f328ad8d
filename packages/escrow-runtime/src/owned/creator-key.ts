// The creator key that signs an escrow's diffs (spec §2.2 models[].private_key_env, §5.1.6): the env
// variable named by escrows.signer_key_env, else the gateway's default DEVSHARD_PRIVATE_KEY. Errors
// name the variable, never the value.
import { DEFAULT_PRIVATE_KEY_ENV, type PrivateKey, privateKeyFromEnv } from '@gonka-gateway/chain';
import type { ActiveEscrow } from '../claim/active-escrows.js';

export class CreatorKeyError extends Error {
  override name = 'CreatorKeyError';
}

export function creatorKeyFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): (escrow: ActiveEscrow) => PrivateKey {
  return (escrow) => {
    if (escrow.hasEncryptedKey) {
      throw new CreatorKeyError(
        `escrow ${escrow.escrowId}: its creator key is stored encrypted, which this runtime cannot decrypt yet`,
      );
    }
    return privateKeyFromEnv(env, escrow.signerKeyEnv ?? DEFAULT_PRIVATE_KEY_ENV);
  };
}
