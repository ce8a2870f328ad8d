// Node `/v1/epochs/latest` (chain-and-network.md §3.3): the current phase and stage heights, from
// which the gateway derives the epoch switch height (escrow rotation) and whether PoC is running
// (requests are blocked then unless in relaxed mode).
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed } from './get-parsed.js';
import { asObject, bool, int, type JsonObject, optObject, str } from './json-fields.js';

export const LATEST_EPOCH_PATH = '/v1/epochs/latest';

export const CONFIRMATION_POC_PHASES = [
  'CONFIRMATION_POC_INACTIVE',
  'CONFIRMATION_POC_GRACE_PERIOD',
  'CONFIRMATION_POC_GENERATION',
  'CONFIRMATION_POC_VALIDATION',
  'CONFIRMATION_POC_COMPLETED',
] as const;
export type ConfirmationPocPhase = (typeof CONFIRMATION_POC_PHASES)[number] | 'UNKNOWN';

export interface EpochStages {
  epochIndex: bigint;
  setNewValidators: bigint;
  nextPocStart: bigint;
  raw: JsonObject;
}

export interface LatestEpoch {
  blockHeight: bigint;
  /** `Inference`, `PoCGenerate`, `PoCGenerateWindDown`, `PoCValidate`, `PoCValidateWindDown`, … */
  phase: string;
  epochIndex: bigint;
  pocStartBlockHeight: bigint;
  epochStages: EpochStages | null;
  nextEpochStages: EpochStages | null;
  isConfirmationPocActive: boolean;
  confirmationPoc: { phase: ConfirmationPocPhase; triggerHeight: bigint } | null;
  raw: JsonObject;
}

/** The phase arrives as a number (0–4) or a name, with or without the `CONFIRMATION_POC_` prefix. */
export function confirmationPocPhase(value: unknown): ConfirmationPocPhase {
  if (typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value))) {
    return CONFIRMATION_POC_PHASES[Number(value)] ?? 'UNKNOWN';
  }
  if (typeof value !== 'string') return 'UNKNOWN';
  const upper = value.toUpperCase();
  const full = upper.startsWith('CONFIRMATION_POC_') ? upper : `CONFIRMATION_POC_${upper}`;
  return (CONFIRMATION_POC_PHASES as readonly string[]).includes(full)
    ? (full as ConfirmationPocPhase)
    : 'UNKNOWN';
}

function parseStages(o: JsonObject | undefined, p: string): EpochStages | null {
  if (!o) return null;
  return {
    epochIndex: int(o, 'epoch_index', p),
    setNewValidators: int(o, 'set_new_validators', p),
    nextPocStart: int(o, 'next_poc_start', p),
    raw: o,
  };
}

export function parseLatestEpoch(json: unknown): LatestEpoch {
  const o = asObject(json, '');
  const latest = optObject(o, 'latest_epoch', '') ?? {};
  const event = optObject(o, 'active_confirmation_poc_event', '');
  return {
    blockHeight: int(o, 'block_height', ''),
    phase: str(o, 'phase', ''),
    epochIndex: int(latest, 'index', 'latest_epoch'),
    pocStartBlockHeight: int(latest, 'poc_start_block_height', 'latest_epoch'),
    epochStages: parseStages(optObject(o, 'epoch_stages', ''), 'epoch_stages'),
    nextEpochStages: parseStages(optObject(o, 'next_epoch_stages', ''), 'next_epoch_stages'),
    isConfirmationPocActive: bool(o, 'is_confirmation_poc_active', ''),
    confirmationPoc: event
      ? {
          phase: confirmationPocPhase(event.phase),
          triggerHeight: int(event, 'trigger_height', 'active_confirmation_poc_event'),
        }
      : null,
    raw: o,
  };
}

export function queryLatestEpoch(client: ChainClient, options?: GetOptions): Promise<LatestEpoch> {
  return getParsed(client, 'publicApi', LATEST_EPOCH_PATH, parseLatestEpoch, options);
}
