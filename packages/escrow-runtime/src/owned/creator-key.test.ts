import { PrivateKey } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import type { ActiveEscrow } from '../claim/active-escrows.js';
import { CreatorKeyError, creatorKeyFromEnv } from './creator-key.js';

const HEX_A = '11'.repeat(32);
const HEX_B = '22'.repeat(32);
const escrow = (extra: Partial<ActiveEscrow> = {}): ActiveEscrow => ({
  escrowId: 7n,
  modelId: 'm',
  signerKeyEnv: null,
  hasEncryptedKey: false,
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

  it('refuses an encrypted key clearly (not supported yet)', () => {
    expect(() => keyFor(escrow({ hasEncryptedKey: true }))).toThrow(CreatorKeyError);
    expect(() => keyFor(escrow({ hasEncryptedKey: true }))).toThrow(/encrypted/);
  });
});
