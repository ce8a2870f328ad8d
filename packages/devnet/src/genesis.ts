// Genesis: well-known dev accounts, network participants (hosts) and models. Keys are derived from
// fixed strings, so every devnet has the same addresses, like a local dev chain's test keys. They
// are public: never fund them on a real network.
import { PrivateKey, sha256 } from '@gonka-gateway/chain';
import { ensureAccount, MODULE_NAMES, mint, moduleAddress } from './chain/bank.js';
import type { ChainState } from './chain/state.js';

export const QWEN_MODEL = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';
export const MINIMAX_MODEL = 'MiniMaxAI/MiniMax-M2.7';
export const DEVNET_MODELS = [QWEN_MODEL, MINIMAX_MODEL] as const;

export const GNK = 1_000_000_000n;

const keyFrom = (text: string): PrivateKey => PrivateKey.fromBytes(sha256(new TextEncoder().encode(text)));

export interface DevAccount {
  /** Stable label, e.g. `creator-0`. */
  name: string;
  key: PrivateKey;
  address: string;
  /** In devshard_escrow_params.allowed_creator_addresses at genesis. */
  allowlisted: boolean;
  /** Pubkey already on chain at genesis (as if the account had signed a tx). */
  pubkeyPublished: boolean;
  genesisBalance: bigint;
}

export interface GenesisParticipant {
  name: string;
  key: PrivateKey;
  /** Holds an authz grant for MsgStartInference from `key` (a warm key, devshard-protocol.md §5.7). */
  warmKey: PrivateKey;
  weight: bigint;
  models: readonly string[];
}

interface AccountSpec {
  name: string;
  allowlisted: boolean;
  pubkeyPublished: boolean;
}

/** Dev account N has the key sha256("gonka devnet account N"). */
const ACCOUNT_SPECS: readonly AccountSpec[] = [
  { name: 'creator-0', allowlisted: true, pubkeyPublished: true },
  { name: 'creator-1', allowlisted: true, pubkeyPublished: true },
  { name: 'creator-2', allowlisted: true, pubkeyPublished: true },
  { name: 'creator-fresh', allowlisted: true, pubkeyPublished: false },
  { name: 'outsider', allowlisted: false, pubkeyPublished: true },
  { name: 'outsider-fresh', allowlisted: false, pubkeyPublished: false },
];

const DEV_ACCOUNT_BALANCE = 1_000n * GNK;
const PARTICIPANT_BALANCE = 100n * GNK;

/** Four hosts with different weights; the lightest does not serve MiniMax. */
const PARTICIPANT_SPECS = [
  { name: 'host-0', weight: 400n, models: [QWEN_MODEL, MINIMAX_MODEL] },
  { name: 'host-1', weight: 300n, models: [QWEN_MODEL, MINIMAX_MODEL] },
  { name: 'host-2', weight: 200n, models: [QWEN_MODEL, MINIMAX_MODEL] },
  { name: 'host-3', weight: 100n, models: [QWEN_MODEL] },
] as const;

export function devAccounts(extraKeys: readonly PrivateKey[]): DevAccount[] {
  const accounts = ACCOUNT_SPECS.map((spec, n) => {
    const key = keyFrom(`gonka devnet account ${n}`);
    return { ...spec, key, address: key.address, genesisBalance: DEV_ACCOUNT_BALANCE };
  });
  for (const [i, key] of extraKeys.entries()) {
    if (accounts.some((a) => a.address === key.address)) continue;
    accounts.push({
      name: `extra-${i}`,
      key,
      address: key.address,
      allowlisted: true,
      pubkeyPublished: false,
      genesisBalance: DEV_ACCOUNT_BALANCE,
    });
  }
  return accounts;
}

export function genesisParticipants(): GenesisParticipant[] {
  return PARTICIPANT_SPECS.map((spec, n) => ({
    name: spec.name,
    key: keyFrom(`gonka devnet participant ${n}`),
    warmKey: keyFrom(`gonka devnet participant ${n} warm`),
    weight: spec.weight,
    models: spec.models,
  }));
}

/** Writes genesis balances, keys, grants and participant records into the chain's committed state. */
export function applyGenesis(
  chain: ChainState,
  accounts: readonly DevAccount[],
  participants: readonly GenesisParticipant[],
) {
  const state = chain.committed;
  for (const name of MODULE_NAMES) ensureAccount(state, moduleAddress(name), name);
  for (const p of participants) {
    mint(state, p.key.address, PARTICIPANT_BALANCE);
    state.accounts.set(p.key.address, { ...state.accounts.get(p.key.address)!, pubKey: p.key.publicKey });
    chain.grantWarmKey(p.key.address, p.warmKey.address);
    chain.participants.push({
      address: p.key.address,
      validatorKey: p.key.publicKey,
      weight: p.weight,
      models: p.models,
      inferenceUrl: '',
    });
  }
  for (const a of accounts) {
    mint(state, a.address, a.genesisBalance);
    if (a.pubkeyPublished)
      state.accounts.set(a.address, { ...state.accounts.get(a.address)!, pubKey: a.key.publicKey });
  }
}

export interface GovernanceModel {
  id: string;
  proposed_by: string;
  units_of_compute_per_token: string;
  hf_repo: string;
  hf_commit: string;
  model_args: string[];
  v_ram: string;
  throughput_per_nonce: string;
  validation_threshold: { value: string; exponent: number };
  context_window: string;
}

export function governanceModels(): GovernanceModel[] {
  return [
    {
      id: QWEN_MODEL,
      proposed_by: 'genesis',
      units_of_compute_per_token: '1000',
      hf_repo: QWEN_MODEL,
      hf_commit: 'devnet',
      model_args: ['--max-model-len', '240000'],
      v_ram: '640',
      throughput_per_nonce: '1000',
      validation_threshold: { value: '970', exponent: -3 },
      context_window: '240000',
    },
    {
      id: MINIMAX_MODEL,
      proposed_by: 'genesis',
      units_of_compute_per_token: '1000',
      hf_repo: MINIMAX_MODEL,
      hf_commit: 'devnet',
      model_args: [],
      v_ram: '480',
      throughput_per_nonce: '1000',
      validation_threshold: { value: '950', exponent: -3 },
      context_window: '196608',
    },
  ];
}
