// Session initialisation (devshard-protocol.md §5.2): balance = amount − create fee (fail if the
// amount is smaller), fees = create fee, nonce 0, phase Active, host stats zeroed for every slot.

import { DevshardError, DevshardErrorCode } from '../errors.js';
import { EMPTY_HEIGHT_SYNC } from '../hash/rest-hash.js';
import { SessionPhase } from '../hash/root-formula.js';
import {
  type ConfigWarning,
  type EscrowConfigRow,
  resolveSessionConfig,
  type SessionChainParams,
} from './config.js';
import { buildGroup } from './group.js';
import { EMPTY_ID_LOG } from './id-log.js';
import { LiveRecords } from './live-records.js';
import { profileForTag } from './profile.js';
import { withRoot } from './root.js';
import type { HostStats, SessionConfig, SessionState } from './types.js';

const ZERO_STATS: HostStats = Object.freeze({
  missed: 0,
  invalid: 0,
  cost: 0n,
  requiredValidations: 0,
  completedValidations: 0,
});

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** Canonical decimal form of a uint64 escrow id (§1): no sign, no leading zeros. */
export function canonicalEscrowId(id: bigint | string): string {
  const text = typeof id === 'bigint' ? id.toString() : id;
  if (!/^(0|[1-9][0-9]*)$/.test(text) || BigInt(text) > U64_MAX) {
    throw new DevshardError(DevshardErrorCode.InvalidConfig, 'escrow id is not a canonical uint64');
  }
  return text;
}

export interface CreateSessionInput {
  /** The string hashed and signed everywhere (canonical decimal for chain escrows). */
  readonly escrowId: string;
  /** State-root tag; selects the protocol profile. */
  readonly tag: string;
  /** Escrow creator address (diff signer). */
  readonly creator: string;
  /** Ordered cold addresses; slot id = index. */
  readonly slots: readonly string[];
  /** Escrow amount before the create fee. */
  readonly amount: bigint;
  /** Fully resolved configuration (no defaults are applied here). */
  readonly config: SessionConfig;
}

export function createSessionState(input: CreateSessionInput): SessionState {
  const profile = profileForTag(input.tag);
  const group = buildGroup(input.slots);
  if (input.amount < input.config.createDevshardFee) {
    throw new DevshardError(
      DevshardErrorCode.InsufficientBalance,
      `create devshard fee ${input.config.createDevshardFee} exceeds escrow amount ${input.amount}`,
    );
  }
  return withRoot({
    escrowId: input.escrowId,
    tag: input.tag,
    profile,
    creator: input.creator,
    config: Object.freeze({ ...input.config }),
    group,
    balance: input.amount - input.config.createDevshardFee,
    fees: input.config.createDevshardFee,
    phase: SessionPhase.Active,
    finalizeNonce: 0n,
    latestNonce: 0n,
    inferences: LiveRecords.EMPTY,
    startedIds: EMPTY_ID_LOG,
    hostStats: Object.freeze(group.slots.map(() => ZERO_STATS)),
    warmKeys: new Map(),
    sealedAcc: new Uint8Array(32),
    heightSync: EMPTY_HEIGHT_SYNC,
    heightSyncLog: { maxTurnSeq: 0n, heartbeatTurns: new Map() },
    voteSigStyle: 'unknown',
  });
}

/** The on-chain escrow row and what the session needs besides it. */
export interface EscrowRow extends EscrowConfigRow {
  readonly escrowId: bigint;
  readonly creator: string;
  readonly amount: bigint;
  readonly slots: readonly string[];
}

export function sessionFromEscrow(
  row: EscrowRow,
  options: { readonly tag: string; readonly chainParams?: SessionChainParams },
): { state: SessionState; warnings: ConfigWarning[] } {
  const { config, warnings } = resolveSessionConfig(row.slots.length, row, options.chainParams);
  const state = createSessionState({
    escrowId: canonicalEscrowId(row.escrowId),
    tag: options.tag,
    creator: row.creator,
    slots: row.slots,
    amount: row.amount,
    config,
  });
  return { state, warnings };
}
