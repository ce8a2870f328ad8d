import { ConfigValueError } from './parsers.js';

/** One entry of DEVSHARDS_JSON: an escrow that already exists on chain, registered at start. */
export interface PreregisteredEscrow {
  escrowId: bigint;
  /** When absent, the model is read from the on-chain escrow row. */
  modelId?: string;
  active: boolean;
  /** Environment variable holding this escrow's creator key; default DEVSHARD_PRIVATE_KEY. */
  privateKeyEnv?: string;
}

const KNOWN_KEYS = new Set(['escrow_id', 'model_id', 'active', 'private_key_env']);
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

function escrowId(value: unknown, where: string): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && /^(0|[1-9]\d*)$/.test(value) && BigInt(value) <= 0xffff_ffff_ffff_ffffn) {
    return BigInt(value);
  }
  throw new ConfigValueError(`${where}.escrow_id must be a non-negative integer (number or decimal string)`);
}

/** DEVSHARDS_JSON: a JSON array of `{escrow_id, model_id?, active?, private_key_env?}`. */
export function parsePreregisteredEscrows(raw: string): PreregisteredEscrow[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigValueError('must be valid JSON (a JSON array of escrows, e.g. [] or [{"escrow_id":1}])');
  }
  if (!Array.isArray(parsed)) throw new ConfigValueError('must be a JSON array of escrows (use [] for none)');
  const seen = new Set<bigint>();
  return parsed.map((item, i) => {
    const where = `[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new ConfigValueError(`${where} must be an object with escrow_id`);
    }
    const obj = item as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      if (!KNOWN_KEYS.has(key))
        throw new ConfigValueError(`${where} has unknown field ${JSON.stringify(key)}`);
    }
    const id = escrowId(obj.escrow_id, where);
    if (seen.has(id)) throw new ConfigValueError(`${where}.escrow_id ${id} is listed twice`);
    seen.add(id);
    const entry: PreregisteredEscrow = { escrowId: id, active: true };
    if (obj.model_id !== undefined) {
      if (typeof obj.model_id !== 'string' || obj.model_id.trim() === '') {
        throw new ConfigValueError(`${where}.model_id must be a non-empty string`);
      }
      entry.modelId = obj.model_id;
    }
    if (obj.active !== undefined) {
      if (typeof obj.active !== 'boolean')
        throw new ConfigValueError(`${where}.active must be true or false`);
      entry.active = obj.active;
    }
    if (obj.private_key_env !== undefined) {
      if (typeof obj.private_key_env !== 'string' || !ENV_NAME.test(obj.private_key_env)) {
        throw new ConfigValueError(`${where}.private_key_env must be an environment variable name`);
      }
      entry.privateKeyEnv = obj.private_key_env;
    }
    return entry;
  });
}
