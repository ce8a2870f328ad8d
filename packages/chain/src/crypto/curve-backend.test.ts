import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import * as secp from '@noble/secp256k1';
import { describe, expect, it } from 'vitest';
import { type CurveBackend, loadNativeBackend, nobleBackend, selectBackend } from './curve-backend.js';

const native = loadNativeBackend();
const N = secp.Point.CURVE().n;

function highS(sig: Uint8Array): Uint8Array {
  const s = BigInt(`0x${bytesToHex(sig.subarray(32))}`);
  const out = Uint8Array.from(sig);
  out.set(Buffer.from((N - s).toString(16).padStart(64, '0'), 'hex'), 32);
  return out;
}

// Whether a call succeeds, and what it returns, must not depend on the backend.
function outcome(f: () => Uint8Array | boolean): string {
  try {
    const r = f();
    return typeof r === 'boolean' ? String(r) : bytesToHex(r);
  } catch {
    return 'throws';
  }
}

describe('curve backends', () => {
  it('the native binding loads on this platform (it ships a linux-x64 prebuild)', () => {
    expect(native?.name).toBe('native');
    expect(selectBackend({}).name).toBe('native');
    expect(selectBackend({ GATEWAY_SECP256K1_BACKEND: 'noble' }).name).toBe('noble');
  });

  it.skipIf(!native)('sign, recover and verify give identical results on random inputs', () => {
    const n = native as CurveBackend;
    for (let i = 0; i < 300; i++) {
      const key = secp.utils.randomSecretKey();
      const digest = sha256(randomBytes(40));
      const a = nobleBackend.sign(digest, key);
      const b = n.sign(digest, key);
      expect(bytesToHex(b.signature)).toBe(bytesToHex(a.signature));
      expect(b.recid).toBe(a.recid);
      const pub = secp.getPublicKey(key, true);
      for (const recid of [a.recid, 1 - a.recid]) {
        expect(outcome(() => n.recover(digest, a.signature, recid))).toBe(
          outcome(() => nobleBackend.recover(digest, a.signature, recid)),
        );
      }
      expect(bytesToHex(n.recover(digest, a.signature, a.recid))).toBe(bytesToHex(pub));
      expect(n.verify(a.signature, digest, pub)).toBe(true);
      expect(nobleBackend.verify(a.signature, digest, pub)).toBe(true);
    }
  });

  it.skipIf(!native)('agree on edge cases: high-S, zero r, wrong key, garbage', () => {
    const n = native as CurveBackend;
    const key = secp.utils.randomSecretKey();
    const pub = secp.getPublicKey(key, true);
    const digest = sha256(Uint8Array.of(1, 2, 3));
    const { signature, recid } = nobleBackend.sign(digest, key);
    const cases: Array<[string, Uint8Array, number]> = [
      ['high-S', highS(signature), 1 - recid],
      ['zero r', Uint8Array.from([...new Uint8Array(32), ...signature.subarray(32)]), recid],
      ['all zero', new Uint8Array(64), 0],
      ['all ff', new Uint8Array(64).fill(0xff), 0],
    ];
    for (const [name, sig, id] of cases) {
      expect(
        outcome(() => n.recover(digest, sig, id)),
        name,
      ).toBe(outcome(() => nobleBackend.recover(digest, sig, id)));
      expect(n.verify(sig, digest, pub), name).toBe(nobleBackend.verify(sig, digest, pub));
    }
    expect(n.verify(highS(signature), digest, pub)).toBe(false);
    const other = secp.getPublicKey(secp.utils.randomSecretKey(), true);
    expect(n.verify(signature, digest, other)).toBe(nobleBackend.verify(signature, digest, other));
  });
});
