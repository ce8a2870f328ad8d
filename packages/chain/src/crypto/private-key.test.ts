import { inspect } from 'node:util';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { base64 } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { decodeAddress, isAddress } from './address.js';
import { PrivateKey } from './private-key.js';
import { recoverAddress } from './recover.js';
import { SECP256K1_ORDER, verifyDigest64 } from './secp256k1.js';

// chain-and-network.md §4.7 and toolchain-notes.md "Signing reference".
const TEST_KEY = '10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce';
const TEST_ADDRESS = 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw';

describe('PrivateKey', () => {
  it('derives the documented address of the all-0x01 key', () => {
    expect(PrivateKey.fromHex('01'.repeat(32)).address).toBe('gonka10xcqpzrky6eff2g52qdye53xkk9jxkvr34az8p');
  });

  it('derives the test vector public key and address, with or without 0x', () => {
    for (const hex of [TEST_KEY, `0x${TEST_KEY}`, TEST_KEY.toUpperCase()]) {
      const key = PrivateKey.fromHex(hex);
      expect(base64.encode(key.publicKey)).toBe('A6Xod/srlhlkDB++cmnVlnX/tzDyuVICYMCDFXDWDxYa');
      expect(key.address).toBe(TEST_ADDRESS);
    }
  });

  it('derives provider P2 from sha256("gonka provider test key")', () => {
    const key = PrivateKey.fromBytes(sha256(utf8ToBytes('gonka provider test key')));
    expect(key.address).toBe('gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p');
  });

  it('rejects malformed keys without echoing them', () => {
    const bad = `${TEST_KEY.slice(0, 62)}zz`;
    expect(() => PrivateKey.fromHex(bad)).toThrow(/64 hex characters/);
    try {
      PrivateKey.fromHex(bad);
    } catch (err) {
      expect(String(err)).not.toContain(bad.slice(0, 20));
    }
    expect(() => PrivateKey.fromHex('00'.repeat(32))).toThrow(/valid secp256k1/);
    expect(() => PrivateKey.fromHex(TEST_KEY.slice(2))).toThrow();
  });

  it('never prints its bytes', () => {
    const key = PrivateKey.fromHex(TEST_KEY);
    const renderings = [String(key), JSON.stringify({ key }), inspect(key), inspect({ nested: { key } })];
    for (const text of renderings) expect(text).not.toContain(TEST_KEY.slice(0, 16));
    expect(inspect(key)).toContain(TEST_ADDRESS);
  });

  it('imports a mnemonic on the 1200 coin-type path', async () => {
    const mnemonic =
      'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
    const key = await PrivateKey.fromMnemonic(mnemonic);
    expect(isAddress(key.address)).toBe(true);
    const cosmosPath = await PrivateKey.fromMnemonic(mnemonic, "m/44'/118'/0'/0/0");
    expect(key.address).not.toBe(cosmosPath.address);
    await expect(PrivateKey.fromMnemonic('not a mnemonic')).rejects.toThrow(/BIP-39/);
  });
});

describe('signatures', () => {
  const key = PrivateKey.fromHex(TEST_KEY);
  // V1 of chain-and-network.md §4.7: body-sha256 scheme, timestamp 1760000000000000000, provider P1.
  const v1Digest = '7789bd1adf1680f74531b8ba94d9cac108597f1db02c419b1677b8db8726b6bf';

  it('signs 64-byte low-S r‖s reproducing vector V1', () => {
    const body = utf8ToBytes(
      '{"model":"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8","messages":[{"role":"user","content":"Hello!"}]}',
    );
    const message = utf8ToBytes(`${bytesToHex(sha256(body))}1760000000000000000${TEST_ADDRESS}`);
    expect(bytesToHex(sha256(message))).toBe(v1Digest);
    const sig = key.signDigest64(sha256(message));
    expect(base64.encode(sig)).toBe(
      'VQjQ4cHlXc7i0pBpJcb/Xws71n9LoS3r0DdcvBOTmO4RDWhMqk+lioSIegyxk+uT8lWMB+geNllhql6bvlrHjw==',
    );
    expect(verifyDigest64(sig, sha256(message), key.publicKey)).toBe(true);
  });

  it('rejects a high-S twin of a valid signature', () => {
    const digest = sha256(utf8ToBytes('high-s'));
    const sig = key.signDigest64(digest);
    const s = BigInt(`0x${bytesToHex(sig.subarray(32))}`);
    const highS = (SECP256K1_ORDER - s).toString(16).padStart(64, '0');
    const twin = Uint8Array.from([...sig.subarray(0, 32), ...Buffer.from(highS, 'hex')]);
    expect(verifyDigest64(twin, digest, key.publicKey)).toBe(false);
  });

  it('produces 65-byte R‖S‖V whose last byte is the recovery id, matching the 64-byte form', () => {
    const digest = sha256(utf8ToBytes('devshard'));
    const sig65 = key.signDigest65(digest);
    expect(sig65.length).toBe(65);
    expect(sig65[64]! <= 1).toBe(true);
    expect(bytesToHex(sig65.subarray(0, 64))).toBe(bytesToHex(key.signDigest64(digest)));
    expect(recoverAddress(digest, sig65)).toBe(TEST_ADDRESS);
  });

  it('recovers to another address (or nothing) when the digest or signature is altered', () => {
    const digest = sha256(utf8ToBytes('devshard'));
    const sig65 = key.signDigest65(digest);
    expect(recoverAddress(sha256(utf8ToBytes('other')), sig65)).not.toBe(TEST_ADDRESS);
    const flipped = Uint8Array.from(sig65);
    flipped[64] = 1 - flipped[64]!;
    expect(recoverAddress(digest, flipped)).not.toBe(TEST_ADDRESS);
    const badV = Uint8Array.from(sig65);
    badV[64] = 27;
    expect(recoverAddress(digest, badV)).toBeNull();
    expect(recoverAddress(digest, sig65.subarray(0, 64))).toBeNull();
  });

  it('decodes addresses strictly', () => {
    expect(decodeAddress(TEST_ADDRESS).length).toBe(20);
    expect(isAddress('cosmos1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw')).toBe(false);
    expect(isAddress(`${TEST_ADDRESS.slice(0, -1)}x`)).toBe(false);
  });
});
