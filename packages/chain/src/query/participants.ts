// Node `/v1/epochs/{current|n}/participants` (chain-and-network.md §3.3). Excluded participants are
// dropped here so no caller can route to one by mistake; proof fields are left in `raw`.
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed, seg } from './get-parsed.js';
import { asObject, int, type JsonObject, objList, optObject, str } from './json-fields.js';

export interface Participant {
  /** `index`: the participant's gonka1… address, signed as the transfer (provider) address. */
  address: string;
  inferenceUrl: string;
  weight: bigint;
  models: string[];
  raw: JsonObject;
}

export interface ParticipantsSnapshot {
  participants: Participant[];
  excludedAddresses: string[];
}

export const participantsPath = (epoch: 'current' | bigint) => `/v1/epochs/${seg(epoch)}/participants`;

export function parseParticipants(json: unknown): ParticipantsSnapshot {
  const body = asObject(json, '');
  const active = optObject(body, 'active_participants', '') ?? {};
  const excludedAddresses = objList(body, 'excluded_participants', '').map(([e, p]) => str(e, 'address', p));
  const excluded = new Set(excludedAddresses);
  const participants = objList(active, 'participants', 'active_participants').map(([o, p]) => ({
    address: str(o, 'index', p),
    inferenceUrl: str(o, 'inference_url', p),
    weight: int(o, 'weight', p),
    models: (Array.isArray(o.models) ? o.models : []).filter((m): m is string => typeof m === 'string'),
    raw: o,
  }));
  return { participants: participants.filter((x) => !excluded.has(x.address)), excludedAddresses };
}

export function queryParticipants(
  client: ChainClient,
  epoch: 'current' | bigint = 'current',
  options?: GetOptions,
): Promise<ParticipantsSnapshot> {
  return getParsed(client, 'publicApi', participantsPath(epoch), parseParticipants, options);
}
