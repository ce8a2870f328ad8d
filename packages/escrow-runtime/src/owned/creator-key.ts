// The creator key that signs an escrow's diffs (spec §2.2 models[].private_key_env, §5.1.6), for the
// proxy's owned sessions and the controller's finalize and create alike. Order: the key stored
// sealed (escrows.signer_key_encrypted, from a body `private_key`), opened with the
// GATEWAY_ENCRYPTION_KEY passed in; else the env variable named by escrows.signer_key_env; else the
// gateway's default DEVSHARD_PRIVATE_KEY. The decrypted bytes are wiped as soon as the PrivateKey
// holds its own copy. Errors name the escrow and the variable, never a key or the sealed bytes.
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

/** Where one escrow's creator key comes from (the escrows row's two columns). */
export interface CreatorKeySource {
  readonly signerKeyEnv: string | null;
  /** iv ‖ tag ‖ ciphertext under GATEWAY_ENCRYPTION_KEY, or null. */
  readonly signerKeyEncrypted: Uint8Array | null;
}

/**
 * The creator key of one source. `owner` names it in errors ("escrow 7", "the creator key").
 * A missing or malformed variable is privateKeyFromEnv's ChainError; a sealed key that cannot be
 * opened is a CreatorKeyError.
 */
export function creatorKeyOf(
  owner: string,
  source: CreatorKeySource,
  env: Readonly<Record<string, string | undefined>>,
  options: CreatorKeyOptions = {},
): PrivateKey {
  if (source.signerKeyEncrypted) return openCreatorKey(owner, source.signerKeyEncrypted, options);
  return privateKeyFromEnv(env, source.signerKeyEnv ?? DEFAULT_PRIVATE_KEY_ENV);
}

/** creatorKeyOf for the escrows a replica owns (OwnedSessions' signerFor). */
export function creatorKeyFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  options: CreatorKeyOptions = {},
): (escrow: ActiveEscrow) => PrivateKey {
  return (escrow) => {
    if (!escrow.signerKeyEncrypted && escrow.hasEncryptedKey) {
      // A row read without its blob (an ActiveEscrow built by hand): refuse rather than sign with
      // the default key, which is not this escrow's creator.
      throw new CreatorKeyError(`escrow ${escrow.escrowId}: its encrypted creator key was not loaded`);
    }
    return creatorKeyOf(`escrow ${escrow.escrowId}`, escrow, env, options);
  };
}

/** Opens a sealed creator key; the plaintext this produces is wiped before returning or throwing. */
export function openCreatorKey(owner: string, sealed: Uint8Array, options: CreatorKeyOptions): PrivateKey {
  if (!options.encryptionKey) {
    throw new CreatorKeyError(
      `${owner}: its creator key is stored encrypted and GATEWAY_ENCRYPTION_KEY is not set`,
    );
  }
  let plain: Uint8Array;
  try {
    plain = openSecret(options.encryptionKey, sealed);
  } catch (error) {
    // SecretBoxError messages carry no key material; anything else is reported by kind only.
    const why = error instanceof SecretBoxError ? error.message : 'decryption failed';
    throw new CreatorKeyError(`${owner}: its encrypted creator key cannot be opened: ${why}`);
  }
  try {
    return PrivateKey.fromBytes(plain);
  } catch {
    throw new CreatorKeyError(`${owner}: its decrypted creator key is not a valid private key`);
  } finally {
    // fromBytes keeps its own copy; wipe the plaintext opened here.
    plain.fill(0);
  }
}
