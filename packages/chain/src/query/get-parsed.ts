// Fetch one JSON document from a configured base and run a parser over it. Every query module goes
// through here, so every failure mode has the same typed error naming base and path.

import { ChainError } from '../errors.js';
import { BASE_LABELS, type ChainBase, type ChainClient, requireBase } from '../http/chain-client.js';
import { assertOk, type JsonResponse, requestJson } from '../http/request-json.js';
import { ResponseShapeError } from './json-fields.js';

export interface GetOptions {
  signal?: AbortSignal;
}

export async function getJson(
  client: ChainClient,
  base: ChainBase,
  path: string,
  options: GetOptions = {},
): Promise<JsonResponse> {
  return requestJson(client, {
    method: 'GET',
    baseUrl: requireBase(client, base),
    path,
    baseLabel: BASE_LABELS[base],
    signal: options.signal,
  });
}

/** Runs `parse` on a 2xx JSON body; shape errors become CHAIN_ERR_BAD_RESPONSE naming the endpoint. */
export function parseBody<T>(res: JsonResponse, parse: (json: unknown) => T): T {
  assertOk(res);
  if (res.json === undefined) {
    throw new ChainError('CHAIN_ERR_BAD_RESPONSE', { endpoint: res.endpoint, detail: 'body is not JSON' });
  }
  try {
    return parse(res.json);
  } catch (err) {
    if (err instanceof ResponseShapeError || err instanceof TypeError || err instanceof RangeError) {
      throw new ChainError('CHAIN_ERR_BAD_RESPONSE', {
        endpoint: res.endpoint,
        detail: err.message,
        cause: err,
      });
    }
    throw err;
  }
}

export async function getParsed<T>(
  client: ChainClient,
  base: ChainBase,
  path: string,
  parse: (json: unknown) => T,
  options: GetOptions = {},
): Promise<T> {
  return parseBody(await getJson(client, base, path, options), parse);
}

/** Path segment escaping for ids and addresses (they are validated, this is belt and braces). */
export const seg = (value: string | bigint) => encodeURIComponent(String(value));
