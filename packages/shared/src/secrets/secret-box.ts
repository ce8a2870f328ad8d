// Private keys given in a request body are kept only encrypted (GATEWAY_ENCRYPTION_KEY):
// AES-256-GCM with a fresh 12-byte IV per value; stored as iv ‖ tag ‖ ciphertext. The tag makes a
// wrong key or a tampered blob fail loudly instead of yielding a different private key. The controller
// seals (escrows.signer_key_encrypted) and the proxies' ownership runtime opens, so both share this one
// implementation.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

function checkKey(key: Buffer): void {
  if (key.length !== 32) throw new SecretBoxError('the encryption key must be 32 bytes');
}

export function sealSecret(key: Buffer, plaintext: Uint8Array): Uint8Array {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return new Uint8Array(Buffer.concat([iv, cipher.getAuthTag(), body]));
}

export function openSecret(key: Buffer, sealed: Uint8Array): Uint8Array {
  checkKey(key);
  if (sealed.length <= IV_BYTES + TAG_BYTES) throw new SecretBoxError('sealed secret is too short');
  const buf = Buffer.from(sealed);
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, IV_BYTES));
  decipher.setAuthTag(buf.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return new Uint8Array(
      Buffer.concat([decipher.update(buf.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]),
    );
  } catch {
    throw new SecretBoxError('sealed secret does not open with this key (wrong key or tampered data)');
  }
}
