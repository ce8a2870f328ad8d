// The AES-256-GCM box of body private keys: a sealed value opens only with its key and unaltered bytes.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSecret, SecretBoxError, sealSecret } from './secret-box.js';

const KEY = Buffer.from('a1'.repeat(32), 'hex');
const SECRET = new Uint8Array(randomBytes(32));

describe('secret box', () => {
  it('opens what it sealed, with a fresh IV each time (iv ‖ tag ‖ ciphertext)', () => {
    const a = sealSecret(KEY, SECRET);
    const b = sealSecret(KEY, SECRET);
    expect(a).toHaveLength(12 + 16 + SECRET.length);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false);
    expect(Buffer.from(openSecret(KEY, a)).equals(Buffer.from(SECRET))).toBe(true);
    expect(Buffer.from(openSecret(KEY, b)).equals(Buffer.from(SECRET))).toBe(true);
  });

  it('rejects a tampered auth tag, IV or ciphertext, and a wrong key', () => {
    const sealed = sealSecret(KEY, SECRET);
    for (const at of [0, 12, 12 + 15, 12 + 16, sealed.length - 1]) {
      const bad = Uint8Array.from(sealed);
      bad[at] = (bad[at] ?? 0) ^ 0x01;
      expect(() => openSecret(KEY, bad)).toThrow(SecretBoxError);
    }
    expect(() => openSecret(Buffer.from('b2'.repeat(32), 'hex'), sealed)).toThrow(/wrong key or tampered/);
  });

  it('refuses a key that is not 32 bytes and a blob too short to hold iv and tag', () => {
    expect(() => sealSecret(KEY.subarray(0, 16), SECRET)).toThrow(/32 bytes/);
    expect(() => openSecret(KEY, new Uint8Array(28))).toThrow(/too short/);
  });

  it('never puts the key or the secret in an error message', () => {
    const sealed = sealSecret(KEY, SECRET);
    sealed[20] = (sealed[20] ?? 0) ^ 0xff;
    const message = (() => {
      try {
        openSecret(KEY, sealed);
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(message).toBeDefined();
    expect(message).not.toContain(KEY.toString('hex'));
    expect(message).not.toContain(Buffer.from(SECRET).toString('hex'));
  });
});
