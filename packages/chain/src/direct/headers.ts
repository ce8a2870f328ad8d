// Headers of a signed direct request (chain-and-network.md §4.4; gateway-spec.md §5.2.4).
// X-Transfer-Address is deliberately absent: it is for node-to-node forwarding and would override
// the provider address the node verifies.
import { base64 } from '@scure/base';
import type { PrivateKey } from '../crypto/private-key.js';
import { sha256 } from '../crypto/secp256k1.js';
import { type DirectSigningScheme, directRequestMessage } from './message.js';

export interface DirectRequestHeaders {
  Authorization: string;
  'Content-Type': 'application/json';
  'X-Requester-Address': string;
  'X-Timestamp': string;
}

export interface DirectHeaderInput {
  key: PrivateKey;
  scheme: DirectSigningScheme;
  /** The exact bytes that will be sent. */
  body: Uint8Array;
  timestampNs: bigint;
  /** The participant's `index` (transfer address), even when sending to a delegate URL (§4.1). */
  providerAddress: string;
}

/** Authorization = base64 of the 64-byte low-S r‖s over SHA-256(message), no `Bearer` (§4.3). */
export function buildDirectHeaders(input: DirectHeaderInput): DirectRequestHeaders {
  const message = directRequestMessage(input.scheme, input.body, input.timestampNs, input.providerAddress);
  return {
    Authorization: base64.encode(input.key.signDigest64(sha256(message))),
    'Content-Type': 'application/json',
    'X-Requester-Address': input.key.address,
    'X-Timestamp': input.timestampNs.toString(),
  };
}
