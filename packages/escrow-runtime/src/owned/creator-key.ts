// The creator key that signs an escrow's diffs (spec §2.2 models[].private_key_env, §5.1.6): the key
// the controller stored encrypted (escrows.signer_key_encrypted, a body `private_key`), opened with the
// GATEWAY_ENCRYPTION_KEY passed in; else the env variable named by escrows.signer_key_env; else the
// gateway's default DEVSHARD_PRIVATE_KEY. Same order as the controller's session key. Errors name the
// escrow and the variable, never a key or the sealed bytes.
import { DEFAULT_PRIVATE_KEY_ENV, PrivateKey, privateKeyFromEnv } from '@gonka-gateway/chain';
import { openSecret, SecretBoxError } from '@gonka-gateway/shared';
import type { ActiveEscrow } from '../claim/active-escrows.js';

export class CreatorKeyError extends Error {
  override name = 'CreatorKeyError';
}

export interface CreatorKeyOptions {
  /** GATEWAY_ENCRYPTION_KEY (config.encryptionKey, 32 bytes); without it encrypted keys are refused. */
  readonly encryptionKey?: Buffer | undefined;
}

export function creatorKeyFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  options: CreatorKeyOptions = {},
): (escrow: ActiveEscrow) => PrivateKey {
  return (escrow) => {
    if (escrow.signerKeyEncrypted) return openCreatorKey(escrow.escrowId, escrow.signerKeyEncrypted, options);
    if (escrow.hasEncryptedKey) {
      // A row read without its blob (an ActiveEscrow built by hand): refuse rather than sign with
      // the default key, which is not this escrow's creator.
      throw new CreatorKeyError(`escrow ${escrow.escrowId}: its encrypted creator key was not loaded`);
    }
    return privateKeyFromEnv(env, escrow.signerKeyEnv ?? DEFAULT_PRIVATE_KEY_ENV);
  };
}

function openCreatorKey(escrowId: bigint, sealed: Uint8Array, options: CreatorKeyOptions): PrivateKey {
  if (!options.encryptionKey) {
    throw new CreatorKeyError(
      `escrow ${escrowId}: its creator key is stored encrypted and GATEWAY_ENCRYPTION_KEY is not set`,
    );
  }
  let plain: Uint8Array;
  try {
    plain = openSecret(options.encryptionKey, sealed);
  } catch (error) {
    // SecretBoxError messages carry no key material; anything else is reported by kind only.
    const why = error instanceof SecretBoxError ? error.message : 'decryption failed';
    throw new CreatorKeyError(`escrow ${escrowId}: its encrypted creator key cannot be opened: ${why}`);
  }
  try {
    return PrivateKey.fromBytes(plain);
  } catch {
    throw new CreatorKeyError(`escrow ${escrowId}: its decrypted creator key is not a valid private key`);
  } finally {
    // fromBytes keeps its own copy; wipe the plaintext this function produced.
    plain.fill(0);
  }
}
