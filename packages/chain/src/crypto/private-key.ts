import { Bip39, EnglishMnemonic, Slip10, Slip10Curve, stringToPath } from '@cosmjs/crypto';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { addressFromPublicKey } from './address.js';
import {
  isValidPrivateKey,
  publicKeyFromPrivate,
  randomPrivateKey,
  signDigest64,
  signDigest65,
} from './secp256k1.js';

/** SLIP-44 coin type 1200, chain-and-network.md §1 (not cosmjs's default 118). */
export const GONKA_HD_PATH = "m/44'/1200'/0'/0/0";

const REDACTED = '[redacted private key]';

/**
 * A secp256k1 private key held in memory only. Its bytes live in a private field, and every way a
 * value usually leaks (string conversion, JSON, util.inspect, pino) prints a placeholder.
 */
export class PrivateKey {
  readonly #bytes: Uint8Array;
  readonly publicKey: Uint8Array;
  readonly address: string;

  private constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.publicKey = publicKeyFromPrivate(bytes);
    this.address = addressFromPublicKey(this.publicKey);
  }

  /** 64 hex characters, with or without `0x`. The error never echoes the input. */
  static fromHex(hex: string): PrivateKey {
    const clean = hex.trim().replace(/^0x/i, '');
    if (!/^[0-9a-fA-F]{64}$/.test(clean)) {
      throw new TypeError('private key must be 64 hex characters (optionally prefixed with 0x)');
    }
    return PrivateKey.fromBytes(hexToBytes(clean.toLowerCase()));
  }

  static fromBytes(bytes: Uint8Array): PrivateKey {
    if (!isValidPrivateKey(bytes)) throw new TypeError('private key is not a valid secp256k1 scalar');
    return new PrivateKey(Uint8Array.from(bytes));
  }

  static async fromMnemonic(mnemonic: string, hdPath = GONKA_HD_PATH): Promise<PrivateKey> {
    let checked: EnglishMnemonic;
    try {
      checked = new EnglishMnemonic(mnemonic.trim().split(/\s+/).join(' '));
    } catch {
      throw new TypeError('mnemonic is not a valid BIP-39 English phrase');
    }
    const seed = await Bip39.mnemonicToSeed(checked);
    const { privkey } = Slip10.derivePath(Slip10Curve.Secp256k1, seed, stringToPath(hdPath));
    return PrivateKey.fromBytes(privkey);
  }

  static random(): PrivateKey {
    return new PrivateKey(randomPrivateKey());
  }

  /** 64-byte low-S r‖s over a digest (Cosmos tx and direct-request signatures). */
  signDigest64(digest: Uint8Array): Uint8Array {
    return signDigest64(digest, this.#bytes);
  }

  /** 65-byte R‖S‖V over a digest (devshard protocol signatures). */
  signDigest65(digest: Uint8Array): Uint8Array {
    return signDigest65(digest, this.#bytes);
  }

  /** The hex form, for the few places that must hand the key on (env files, encrypted storage). */
  exportHex(): string {
    return bytesToHex(this.#bytes);
  }

  /** Raw bytes for libraries that need them (cosmjs wallet); a copy, so callers cannot mutate ours. */
  exportBytes(): Uint8Array {
    return Uint8Array.from(this.#bytes);
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PrivateKey(${this.address})`;
  }
}
