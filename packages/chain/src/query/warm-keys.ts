// Warm keys of a validator (chain-and-network.md §2.6 Settle 5, devshard-protocol.md §5.7):
// the authz grantees of its cold address for `/inference.inference.MsgStartInference`, from the
// standard cosmos authz query `GET /cosmos/authz/v1beta1/grants/granter/{granter}` →
// `{grants: [{granter, grantee, authorization: {"@type", msg}, expiration}], pagination: {next_key}}`.
// Parsed tolerantly: a grant of another message, of another authorization shape, without a grantee,
// or already expired is left out rather than failing the whole answer.
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed, seg } from './get-parsed.js';
import { asObject, list, optObject, str } from './json-fields.js';

export const MSG_START_INFERENCE_TYPE_URL = '/inference.inference.MsgStartInference';

export const authzGrantsByGranterPath = (granter: string) =>
  `/cosmos/authz/v1beta1/grants/granter/${seg(granter)}`;

export interface WarmKeyGrantsPage {
  /** Grantees holding an unexpired MsgStartInference grant from the granter (deduplicated). */
  grantees: string[];
  /** pagination.next_key, or null on the last page. */
  nextKey: string | null;
}

/** One page of the authz grants answer; `nowMs` decides expiry (a grant without expiration never expires). */
export function parseWarmKeyGrants(json: unknown, nowMs: number = Date.now()): WarmKeyGrantsPage {
  const o = asObject(json, '');
  const grantees = new Set<string>();
  for (const item of list(o, 'grants', '')) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) continue;
    const g = item as Record<string, unknown>;
    const grantee = typeof g.grantee === 'string' ? g.grantee : '';
    const auth = g.authorization;
    const msg =
      auth !== null && typeof auth === 'object' && typeof (auth as { msg?: unknown }).msg === 'string'
        ? (auth as { msg: string }).msg
        : '';
    if (grantee === '' || msg !== MSG_START_INFERENCE_TYPE_URL) continue;
    const expiration = typeof g.expiration === 'string' ? g.expiration : '';
    if (expiration !== '') {
      const at = Date.parse(expiration);
      if (Number.isNaN(at) || at <= nowMs) continue;
    }
    grantees.add(grantee);
  }
  const pagination = optObject(o, 'pagination', '');
  const nextKey = pagination ? str(pagination, 'next_key', 'pagination') : '';
  return { grantees: [...grantees], nextKey: nextKey === '' ? null : nextKey };
}

/** Most pages followed per validator (a validator grants its warm key several message types). */
const MAX_PAGES = 20;

/** The warm keys (MsgStartInference grantees) of validator `granter`, every page. */
export async function queryWarmKeys(
  client: ChainClient,
  granter: string,
  options?: GetOptions & { nowMs?: number },
): Promise<string[]> {
  const grantees = new Set<string>();
  let key: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const path: string =
      authzGrantsByGranterPath(granter) + (key === null ? '' : `?pagination.key=${encodeURIComponent(key)}`);
    const parsed: WarmKeyGrantsPage = await getParsed(
      client,
      'chainRest',
      path,
      (json) => parseWarmKeyGrants(json, options?.nowMs),
      options,
    );
    for (const g of parsed.grantees) grantees.add(g);
    if (parsed.nextKey === null || parsed.nextKey === key) break;
    key = parsed.nextKey;
  }
  return [...grantees];
}
