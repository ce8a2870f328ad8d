// One devshard escrow row (chain-and-network.md §3.1). Newer rows add max_nonce, refusal_timeout and
// execution_timeout; older rows simply lack them (zero). A 404 or `found: false` is "no such escrow".
import { ChainError } from '../errors.js';
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getJson, parseBody, seg } from './get-parsed.js';
import { asObject, bool, int, type JsonObject, optObject, str, strList, u32 } from './json-fields.js';

export const escrowPath = (id: bigint) => `/productscience/inference/inference/devshard_escrow/${seg(id)}`;

export interface DevshardEscrow {
  id: bigint;
  creator: string;
  amount: bigint;
  /** Slot i → validator address (one validator may hold several slots). */
  slots: string[];
  epochIndex: bigint;
  /** As the chain sends it (hex). */
  appHash: string;
  settled: boolean;
  tokenPrice: bigint;
  modelId: string;
  createDevshardFee: bigint;
  feePerNonce: bigint;
  validationRate: number;
  voteThresholdFactor: number;
  maxNonce: bigint;
  refusalTimeout: bigint;
  executionTimeout: bigint;
  /** Seal settings frozen on the row (devshard-protocol.md §5.2, §5.6); 0 = the protocol default. */
  inferenceSealGraceNonces: bigint;
  inferenceSealGraceSeconds: bigint;
  autoSealEveryNNonces: bigint;
  raw: JsonObject;
}

/** The first spelling present (revisions name the seal fields differently), else 0. */
function intAlias(o: JsonObject, keys: readonly string[], p: string): bigint {
  const key = keys.find((k) => o[k] !== undefined && o[k] !== null);
  return key === undefined ? 0n : int(o, key, p);
}

export interface EscrowQueryResult {
  found: boolean;
  escrow: DevshardEscrow | null;
}

export function parseEscrow(o: JsonObject, p: string): DevshardEscrow {
  return {
    id: int(o, 'id', p),
    creator: str(o, 'creator', p),
    amount: int(o, 'amount', p),
    slots: strList(o, 'slots', p),
    epochIndex: int(o, 'epoch_index', p),
    appHash: str(o, 'app_hash', p),
    settled: bool(o, 'settled', p),
    tokenPrice: int(o, 'token_price', p),
    modelId: str(o, 'model_id', p),
    createDevshardFee: int(o, 'create_devshard_fee', p),
    feePerNonce: int(o, 'fee_per_nonce', p),
    validationRate: u32(o, 'validation_rate', p),
    voteThresholdFactor: u32(o, 'vote_threshold_factor', p),
    maxNonce: int(o, 'max_nonce', p),
    refusalTimeout: int(o, 'refusal_timeout', p),
    executionTimeout: int(o, 'execution_timeout', p),
    inferenceSealGraceNonces: intAlias(o, ['inference_seal_grace_nonces', 'seal_grace_nonces'], p),
    inferenceSealGraceSeconds: intAlias(o, ['inference_seal_grace_seconds', 'seal_grace_seconds'], p),
    autoSealEveryNNonces: intAlias(o, ['auto_seal_every_n_nonces'], p),
    raw: o,
  };
}

export function parseEscrowResponse(json: unknown): EscrowQueryResult {
  const body = asObject(json, '');
  const escrow = optObject(body, 'escrow', '');
  // proto JSON may omit `found` (default false); an answer without it counts as found only when it
  // carries a real row (non-zero id), since a not-found answer may still hold a zero-valued escrow.
  const found =
    body.found === undefined ? !!escrow && int(escrow, 'id', 'escrow') > 0n : bool(body, 'found', '');
  if (!found) return { found: false, escrow: null };
  if (!escrow) throw new TypeError('escrow: expected an object when found is true');
  return { found: true, escrow: parseEscrow(escrow, 'escrow') };
}

export async function queryEscrow(
  client: ChainClient,
  escrowId: bigint,
  options?: GetOptions,
): Promise<EscrowQueryResult> {
  if (escrowId <= 0n)
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'escrow id must be positive' });
  const res = await getJson(client, 'chainRest', escrowPath(escrowId), options);
  if (res.status === 404) return { found: false, escrow: null };
  return parseBody(res, parseEscrowResponse);
}
