// Choosing where a direct request goes (chain-and-network.md §4.1; gateway-spec.md §5.2.1).
import { isAddress } from '../crypto/address.js';
import { ChainError } from '../errors.js';
import type { ChainClient } from '../http/chain-client.js';
import type { NodeIdentity } from '../query/identity.js';
import { queryInferenceParams } from '../query/params.js';
import { type Participant, queryParticipants } from '../query/participants.js';

export interface DirectEndpoint {
  /** Inference base including `/v1`, e.g. `http://host:8000/v1`. */
  baseUrl: string;
  /** The participant address that is signed as provider (its `index`). */
  transferAddress: string;
}

/** Appends `/v1` when the URL does not already end with it (§4.1 step 4). */
export function inferenceBaseUrl(url: string): string {
  const trimmed = url.trim().replace(/\/+$/, '');
  return /\/v1$/.test(trimmed) ? trimmed : `${trimmed}/v1`;
}

/**
 * Participants that can take a direct request: with both inference_url and index, not excluded,
 * and listed in allowed_transfer_addresses when that list is non-empty (§4.1 steps 1–2).
 */
export function eligibleEndpoints(
  participants: readonly Participant[],
  options: { allowedTransferAddresses?: readonly string[]; excludedAddresses?: readonly string[] } = {},
): DirectEndpoint[] {
  const allowed = new Set(options.allowedTransferAddresses ?? []);
  const excluded = new Set(options.excludedAddresses ?? []);
  return participants
    .filter((p) => p.inferenceUrl.trim() !== '' && p.address !== '')
    .filter((p) => !excluded.has(p.address))
    .filter((p) => allowed.size === 0 || allowed.has(p.address))
    .map((p) => ({ baseUrl: inferenceBaseUrl(p.inferenceUrl), transferAddress: p.address }));
}

/** Uniformly random pick (gateway-spec.md §5.2.1). `random` returns [0, 1), like Math.random. */
export function pickEndpoint(
  endpoints: readonly DirectEndpoint[],
  random: () => number = Math.random,
): DirectEndpoint {
  if (endpoints.length === 0) {
    throw new ChainError('CHAIN_ERR_NO_ENDPOINT', {
      detail: 'no participant has an inference URL and an allowed transfer address',
      hint: 'pass a fixed endpoint as "url;transferAddress"',
    });
  }
  const i = Math.min(endpoints.length - 1, Math.floor(random() * endpoints.length));
  return endpoints[i]!;
}

/** A manual override `url;transferAddress` (§4.1 step 4). */
export function parseEndpointOverride(value: string): DirectEndpoint {
  const [url, address, ...rest] = value.split(';').map((s) => s.trim());
  if (!url || !address || rest.length > 0) {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', {
      detail: 'endpoint override must be "url;transferAddress"',
    });
  }
  if (!/^https?:\/\//.test(url))
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'endpoint URL must be http(s)' });
  if (!isAddress(address)) {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', {
      detail: 'endpoint transfer address must be a gonka1… address',
    });
  }
  return { baseUrl: inferenceBaseUrl(url), transferAddress: address };
}

/**
 * Sends to a delegate URL from the participant's `/v1/identity` when it lists any; the signed
 * provider address stays the participant's own (§4.1 step 3, §3.3).
 */
export function withIdentityDelegate(
  endpoint: DirectEndpoint,
  identity: NodeIdentity,
  random: () => number = Math.random,
): DirectEndpoint {
  const urls = identity.delegates.map((d) => d.url).filter((u) => /^https?:\/\//.test(u));
  if (urls.length === 0) return endpoint;
  const url = urls[Math.min(urls.length - 1, Math.floor(random() * urls.length))]!;
  return { baseUrl: inferenceBaseUrl(url), transferAddress: endpoint.transferAddress };
}

/** Participants (public API) filtered by the transfer-agent allowlist (chain REST). */
export async function discoverDirectEndpoints(
  client: ChainClient,
  signal?: AbortSignal,
): Promise<DirectEndpoint[]> {
  const [snapshot, params] = await Promise.all([
    queryParticipants(client, 'current', { signal }),
    queryInferenceParams(client, { signal }),
  ]);
  return eligibleEndpoints(snapshot.participants, {
    allowedTransferAddresses: params.allowedTransferAddresses,
    excludedAddresses: snapshot.excludedAddresses,
  });
}
