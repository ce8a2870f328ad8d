// Protocol profiles (devshard-protocol.md §11): the composition rules that differ between the pinned
// v5 line and the older v4.x line, selected by the session's state-root tag. Tags of the v4 and v3
// lines select v4, the v5 line selects v5 (protocol-versions.ts); any other tag is refused rather
// than guessed.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import type { TxKind } from '../proto/devshard-tx.js';
import { SUPPORTED_PROTOCOL_VERSIONS, supportedLineOf } from '../protocol-versions.js';

export interface ProtocolProfile {
  readonly name: 'v5' | 'v4';
  /** rest_hash ends with height_sync_hash (v5) or not (v4). */
  readonly restHashWithHeightSync: boolean;
  /** Finished records seal after seal_grace_seconds + execution_timeout (v5) or grace only (v4). */
  readonly finishedSealAddsExecutionTimeout: boolean;
  /** Observed height stamps: receipt fields 9–10 and the record height fields (v5 only). */
  readonly heightStamps: boolean;
  /** Finish clamps actual cost to the reservation (v5) instead of failing (v4). */
  readonly clampActualCost: boolean;
  /** Oneof members this line knows; any other member is an empty tx to it. */
  readonly txKinds: ReadonlySet<TxKind>;
}

const V4_KINDS: readonly TxKind[] = [
  'startInference',
  'confirmStart',
  'finishInference',
  'timeoutInference',
  'validation',
  'validationVote',
  'revealSeed',
  'finalizeRound',
];

export const PROFILE_V5: ProtocolProfile = Object.freeze({
  name: 'v5',
  restHashWithHeightSync: true,
  finishedSealAddsExecutionTimeout: true,
  heightStamps: true,
  clampActualCost: true,
  txKinds: new Set<TxKind>([...V4_KINDS, 'forceHeightSyncTurn', 'heartbeat', 'heightAck', 'errorMiss']),
});

export const PROFILE_V4: ProtocolProfile = Object.freeze({
  name: 'v4',
  restHashWithHeightSync: false,
  finishedSealAddsExecutionTimeout: false,
  heightStamps: false,
  clampActualCost: false,
  txKinds: new Set<TxKind>(V4_KINDS),
});

export function profileForTag(tag: string): ProtocolProfile {
  const line = supportedLineOf(tag);
  if (line === 'v5') return PROFILE_V5;
  if (line === 'v4' || line === 'v3') return PROFILE_V4;
  throw new DevshardError(
    DevshardErrorCode.InvalidConfig,
    `unsupported state-root tag ${JSON.stringify(tag)}: this gateway speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
  );
}
