import { PrivateKey } from '@gonka-gateway/chain';
import { sealSecret } from '@gonka-gateway/shared';
import { describe, expect, it, vi } from 'vitest';
import type { ActiveEscrow } from '../claim/active-escrows.js';
import { CreatorKeyError, creatorKeyFromEnv, creatorKeyOf } from './creator-key.js';

// Every plaintext openSecret hands out, to check that the resolver wipes it.
const opened = vi.hoisted(() => [] as Uint8Array[]);
vi.mock('@gonka-gateway/shared', async (importOriginal) => {
  const actual = await importOriginal<typeof import('@gonka-gateway/shared')>();
  return {
    ...actual,
    openSecret: (key: Buffer, sealed: Uint8Array) => {
      const plain = actual.openSecret(key, sealed);
      opened.push(plain);
      return plain;
    },
  };
});

const HEX_A = '11'.repeat(32);
const HEX_B = '22'.repeat(32);
const HEX_C = '33'.repeat(32);
const ENC = Buffer.from('44'.repeat(32), 'hex');
const escrow = (extra: Partial<ActiveEscrow> = {}): ActiveEscrow => ({
  escrowId: 7n,
  modelId: 'm',
  version: 'v5',
  signerKeyEnv: null,
  hasEncryptedKey: false,
  signerKeyEncrypted: null,
  ...extra,
});

describe('creatorKeyFromEnv', () => {
  const keyFor = creatorKeyFromEnv({ DEVSHARD_PRIVATE_KEY: HEX_A, MODEL_KEY: HEX_B });

  it('reads the variable named by escrows.signer_key_env, else DEVSHARD_PRIVATE_KEY', () => {
    expect(keyFor(escrow({ signerKeyEnv: 'MODEL_KEY' })).address).toBe(PrivateKey.fromHex(HEX_B).address);
    expect(keyFor(escrow()).address).toBe(PrivateKey.fromHex(HEX_A).address);
  });

  it('names a missing variable without echoing any key', () => {
    const error = (() => {
      try {
        keyFor(escrow({ signerKeyEnv: 'NOT_SET' }));
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).toContain('NOT_SET');
    expect(error?.message).not.toContain(HEX_A);
  });

  it('opens escrows.signer_key_encrypted with the encryption key passed in, before any variable', () => {
    const sealed = sealSecret(ENC, PrivateKey.fromHex(HEX_C).exportBytes());
    const key = creatorKeyFromEnv(
      { DEVSHARD_PRIVATE_KEY: HEX_A },
      { encryptionKey: ENC },
    )(escrow({ hasEncryptedKey: true, signerKeyEncrypted: sealed }));
    expect(key.address).toBe(PrivateKey.fromHex(HEX_C).address);
  });

  it('refuses an encrypted key without the encryption key, with a wrong one, or not loaded', () => {
    const sealed = sealSecret(ENC, PrivateKey.fromHex(HEX_C).exportBytes());
    const row = escrow({ hasEncryptedKey: true, signerKeyEncrypted: sealed });
    const messageOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(CreatorKeyError);
        return (e as Error).message;
      }
      throw new Error('expected a CreatorKeyError');
    };
    const messages = [
      messageOf(() => keyFor(row)),
      messageOf(() => creatorKeyFromEnv({}, { encryptionKey: Buffer.alloc(32, 9) })(row)),
      messageOf(() => creatorKeyFromEnv({}, { encryptionKey: ENC })(escrow({ hasEncryptedKey: true }))),
    ];
    expect(messages[0]).toMatch(/escrow 7: .*GATEWAY_ENCRYPTION_KEY is not set/);
    expect(messages[1]).toMatch(/escrow 7: .*cannot be opened/);
    expect(messages[2]).toMatch(/escrow 7: .*not loaded/);
    for (const m of messages) {
      for (const secret of [HEX_C, ENC.toString('hex'), Buffer.from(sealed).toString('hex')]) {
        expect(m).not.toContain(secret);
      }
    }
  });

  it('wipes the decrypted plaintext once the key holds its own copy, also when it is no key', () => {
    opened.length = 0;
    const sealed = sealSecret(ENC, PrivateKey.fromHex(HEX_C).exportBytes());
    const key = creatorKeyOf(
      'escrow 7',
      { signerKeyEnv: null, signerKeyEncrypted: sealed },
      {},
      { encryptionKey: ENC },
    );
    expect(key.address).toBe(PrivateKey.fromHex(HEX_C).address);
    const notAKey = sealSecret(ENC, new Uint8Array(32));
    expect(() =>
      creatorKeyOf(
        'escrow 8',
        { signerKeyEnv: null, signerKeyEncrypted: notAKey },
        {},
        { encryptionKey: ENC },
      ),
    ).toThrow(/escrow 8: .*not a valid private key/);
    expect(opened).toHaveLength(2);
    for (const plain of opened) expect(plain.every((b) => b === 0)).toBe(true);
  });
});
