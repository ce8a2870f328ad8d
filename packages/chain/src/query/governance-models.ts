// Node `/v1/governance/models` (chain-and-network.md §3.3; gateway-spec.md §4 operator reads).
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed } from './get-parsed.js';
import { asObject, int, type JsonObject, objList, optObject, str, strList } from './json-fields.js';

export const GOVERNANCE_MODELS_PATH = '/v1/governance/models';

export interface GovernanceModel {
  id: string;
  proposedBy: string;
  unitsOfComputePerToken: bigint;
  hfRepo: string;
  hfCommit: string;
  modelArgs: string[];
  vRam: bigint;
  throughputPerNonce: bigint;
  /** value × 10^exponent. */
  validationThreshold: { value: bigint; exponent: number } | null;
  contextWindow: bigint | null;
  raw: JsonObject;
}

export function parseGovernanceModels(json: unknown): GovernanceModel[] {
  return objList(asObject(json, ''), 'models', '').map(([m, p]) => {
    const vt = optObject(m, 'validation_threshold', p);
    return {
      id: str(m, 'id', p),
      proposedBy: str(m, 'proposed_by', p),
      unitsOfComputePerToken: int(m, 'units_of_compute_per_token', p),
      hfRepo: str(m, 'hf_repo', p),
      hfCommit: str(m, 'hf_commit', p),
      modelArgs: strList(m, 'model_args', p),
      vRam: int(m, 'v_ram', p),
      throughputPerNonce: int(m, 'throughput_per_nonce', p),
      validationThreshold: vt
        ? {
            value: int(vt, 'value', `${p}.validation_threshold`),
            exponent: Number(int(vt, 'exponent', `${p}.validation_threshold`)),
          }
        : null,
      contextWindow:
        m.context_window === undefined || m.context_window === null ? null : int(m, 'context_window', p),
      raw: m,
    };
  });
}

export function queryGovernanceModels(client: ChainClient, options?: GetOptions): Promise<GovernanceModel[]> {
  return getParsed(client, 'publicApi', GOVERNANCE_MODELS_PATH, parseGovernanceModels, options);
}
