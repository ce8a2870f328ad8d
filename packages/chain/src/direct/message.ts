// The bytes a signed direct request signs (chain-and-network.md §4.2). The written specification
// signs the raw body; current nodes sign the hex SHA-256 of the body. Both are built as bytes, never
// by re-serialising the body, so what is signed is exactly what is sent.
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '../crypto/secp256k1.js';
import { concat } from '../encoding/proto.js';

export type DirectSigningScheme = 'body-sha256' | 'raw-body';
export const DIRECT_SIGNING_SCHEMES: readonly DirectSigningScheme[] = ['body-sha256', 'raw-body'];

const ascii = (text: string) => new TextEncoder().encode(text);

export function directRequestMessage(
  scheme: DirectSigningScheme,
  body: Uint8Array,
  timestampNs: bigint,
  providerAddress: string,
): Uint8Array {
  const head = scheme === 'body-sha256' ? ascii(bytesToHex(sha256(body))) : body;
  return concat([head, ascii(timestampNs.toString()), ascii(providerAddress)]);
}
