// Session configuration from the escrow row (devshard-protocol.md §5.2): "zero means default" for
// the row's fields, vote_threshold from the escrow's vote_threshold_factor, timeouts from chain
// params read once at session open (§12 #8). The result is frozen into the session.
import type { SessionConfig } from './types.js';

export const DEFAULT_TOKEN_PRICE = 1n;
export const DEFAULT_CREATE_DEVSHARD_FEE = 10_000n;
export const DEFAULT_FEE_PER_NONCE = 1_000n;
export const DEFAULT_SEAL_GRACE_SECONDS = 3_600n;
export const DEFAULT_AUTO_SEAL_EVERY_N_NONCES = 150n;
export const DEFAULT_VALIDATION_RATE = 1_000;
export const DEFAULT_REFUSAL_TIMEOUT = 60n;
export const DEFAULT_EXECUTION_TIMEOUT = 1_920n;
/** MinTokensFloor of the completion API (§5.4). */
export const MAX_TOKENS_FLOOR = 64n;
const MIN_DEFAULT_SEAL_GRACE_NONCES = 20n;

/** The escrow row fields frozen at creation (chain-and-network.md §2.6); zero means default. */
export interface EscrowConfigRow {
  readonly tokenPrice?: bigint;
  readonly createDevshardFee?: bigint;
  readonly feePerNonce?: bigint;
  readonly inferenceSealGraceNonces?: bigint;
  readonly inferenceSealGraceSeconds?: bigint;
  readonly autoSealEveryNNonces?: bigint;
  readonly validationRate?: number;
  /** Percent; 0 means ⌊N/2⌋. */
  readonly voteThresholdFactor?: number;
}

/** Chain params read once at session open; zero or absent means default. */
export interface SessionChainParams {
  readonly refusalTimeout?: bigint;
  readonly executionTimeout?: bigint;
  /**
   * The escrow's max_nonce (§7.5: the row's frozen value, else the params'), the ceiling the user
   * session stops new work below. Not part of the state (hosts check it, the root does not hash it);
   * absent in records stored before it was kept: the session's opener then reads the chain.
   */
  readonly maxNonce?: bigint;
}

export type ConfigWarning = 'seal_grace_nonces_defaulted';

/** ⌊N × factor / 100⌋, or ⌊N/2⌋ when the factor is 0 (§5.2). */
export function voteThresholdFor(groupSize: number, factor: number): number {
  if (factor === 0) return Math.floor(groupSize / 2);
  return Math.floor((groupSize * factor) / 100);
}

/** max(N, 20): the reference code's default when the row holds 0 (§12 #7). */
export function defaultSealGraceNonces(groupSize: number): bigint {
  const n = BigInt(groupSize);
  return n > MIN_DEFAULT_SEAL_GRACE_NONCES ? n : MIN_DEFAULT_SEAL_GRACE_NONCES;
}

const orDefault = (v: bigint | undefined, d: bigint) => (v === undefined || v === 0n ? d : v);

export function resolveSessionConfig(
  groupSize: number,
  row: EscrowConfigRow,
  chain: SessionChainParams = {},
): { config: SessionConfig; warnings: ConfigWarning[] } {
  const warnings: ConfigWarning[] = [];
  const graceNonces = row.inferenceSealGraceNonces ?? 0n;
  if (graceNonces === 0n) warnings.push('seal_grace_nonces_defaulted');
  const config: SessionConfig = Object.freeze({
    tokenPrice: orDefault(row.tokenPrice, DEFAULT_TOKEN_PRICE),
    createDevshardFee: orDefault(row.createDevshardFee, DEFAULT_CREATE_DEVSHARD_FEE),
    feePerNonce: orDefault(row.feePerNonce, DEFAULT_FEE_PER_NONCE),
    voteThreshold: voteThresholdFor(groupSize, row.voteThresholdFactor ?? 0),
    validationRate: row.validationRate || DEFAULT_VALIDATION_RATE,
    sealGraceNonces: graceNonces === 0n ? defaultSealGraceNonces(groupSize) : graceNonces,
    sealGraceSeconds: orDefault(row.inferenceSealGraceSeconds, DEFAULT_SEAL_GRACE_SECONDS),
    autoSealEveryNNonces: orDefault(row.autoSealEveryNNonces, DEFAULT_AUTO_SEAL_EVERY_N_NONCES),
    refusalTimeout: orDefault(chain.refusalTimeout, DEFAULT_REFUSAL_TIMEOUT),
    executionTimeout: orDefault(chain.executionTimeout, DEFAULT_EXECUTION_TIMEOUT),
    maxTokensFloor: MAX_TOKENS_FLOOR,
  });
  return { config, warnings };
}
