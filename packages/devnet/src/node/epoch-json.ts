// Node API views of epochs and participants (chain-and-network.md §3.3). The node API is Go JSON:
// heights and weights are numbers here.

import type { EpochParams } from '@gonka-gateway/chain';
import type { DevnetCore } from '../core.js';
import { toBase64 } from '../encoding.js';
import { latestEpochAt, phaseAt, stagesOf } from './epoch-schedule.js';

function stagesJson(p: EpochParams, epoch: bigint) {
  const s = stagesOf(p, epoch);
  return {
    epoch_index: Number(s.epochIndex),
    poc_start: Number(s.pocStart),
    poc_generation_wind_down: Number(s.pocGenerationWindDown),
    poc_validation_start: Number(s.pocValidationStart),
    poc_validation_wind_down: Number(s.pocValidationWindDown),
    poc_validation_end: Number(s.pocValidationWindDown),
    set_new_validators: Number(s.setNewValidators),
    next_poc_start: Number(s.nextPocStart),
    poc_exchange_window: { start: Number(s.pocStart), end: Number(s.pocGenerationWindDown) },
    poc_validation_window: { start: Number(s.pocValidationStart), end: Number(s.pocValidationWindDown) },
  };
}

const ACTIVE_CONFIRMATION = [
  'CONFIRMATION_POC_GRACE_PERIOD',
  'CONFIRMATION_POC_GENERATION',
  'CONFIRMATION_POC_VALIDATION',
];

export function epochsLatestJson(core: DevnetCore) {
  const p = core.chain.effectiveParams().epoch;
  const height = core.blocks.latest.height;
  const latest = latestEpochAt(p, height);
  const event = core.confirmationPoc;
  return {
    block_height: Number(height),
    phase: phaseAt(p, height),
    latest_epoch: { index: Number(latest), poc_start_block_height: Number(stagesOf(p, latest).pocStart) },
    epoch_stages: stagesJson(p, latest),
    next_epoch_stages: stagesJson(p, latest + 1n),
    epoch_params: {
      epoch_length: Number(p.epochLength),
      epoch_shift: Number(p.epochShift),
      poc_stage_duration: Number(p.pocStageDuration),
      poc_validation_delay: Number(p.pocValidationDelay),
      poc_validation_duration: Number(p.pocValidationDuration),
      set_new_validators_delay: Number(p.setNewValidatorsDelay),
    },
    is_confirmation_poc_active: event !== null && ACTIVE_CONFIRMATION.includes(event.phase),
    ...(event
      ? { active_confirmation_poc_event: { phase: event.phase, trigger_height: Number(event.triggerHeight) } }
      : {}),
  };
}

export function participantsJson(core: DevnetCore, epoch: bigint) {
  const { chain } = core;
  const p = chain.effectiveParams().epoch;
  const served = new Set(chain.servedModels());
  const participants = chain.participants.map((r, i) => ({
    index: r.address,
    validator_key: toBase64(r.validatorKey),
    weight: Number(r.weight),
    inference_url: r.inferenceUrl,
    models: r.models.filter((m) => served.has(m)),
    seed: { participant: r.address, epoch_index: Number(epoch), signature: '' },
    ml_nodes: [
      {
        ml_nodes: [
          { node_id: `mlnode-${i}`, timeslot_allocation: [true, false], poc_weight: Number(r.weight) },
        ],
      },
    ],
  }));
  const activeParticipants = {
    participants,
    epoch_group_id: Number(epoch),
    poc_start_block_height: Number(stagesOf(p, epoch).pocStart),
    effective_block_height: Number(stagesOf(p, epoch).setNewValidators),
    created_at_block_height: Number(stagesOf(p, epoch).pocStart),
    epoch_id: Number(epoch),
  };
  const excluded = chain.participants.filter((r) => core.faults.isExcluded(r.address));
  return {
    active_participants: activeParticipants,
    addresses: participants.map((x) => x.index),
    active_participants_bytes: Buffer.from(JSON.stringify(activeParticipants)).toString('hex'),
    proof_ops: { ops: [] },
    validators: [],
    block: [
      {
        app_hash: toBase64(core.blocks.latest.appHash),
        header: { app_hash: toBase64(core.blocks.latest.appHash) },
      },
    ],
    excluded_participants: excluded.map((r) => ({
      address: r.address,
      epoch_index: Number(epoch),
      reason: 'devnet fault',
    })),
  };
}
