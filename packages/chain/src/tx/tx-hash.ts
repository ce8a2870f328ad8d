import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '../crypto/secp256k1.js';

/** Upper-case hex SHA-256 of the TxRaw bytes (chain-and-network.md §2.4), known before broadcast. */
export function txHash(txRawBytes: Uint8Array): string {
  return bytesToHex(sha256(txRawBytes)).toUpperCase();
}
