// The devnet chain: committed stores plus what is not written by txs (params, participants,
// warm-key grants, the tx index). Everything hangs off one instance per devnet.
import type { Faults } from '../faults.js';
import type { DecodedTx } from './decode-tx.js';
import type { TxResult } from './events.js';
import type { DevnetParams } from './params.js';
import type { WeightEntry } from './slot-draw.js';
import { CommittedStores } from './stores.js';

export interface ParticipantRecord {
  address: string;
  /** Compressed secp256k1 key of the participant's account. */
  validatorKey: Uint8Array;
  weight: bigint;
  models: readonly string[];
  /** Set when the participant's server listens; stable across stop/start. */
  inferenceUrl: string;
}

export interface IndexedTx {
  hash: string;
  height: bigint;
  timeNs: bigint;
  result: TxResult;
  tx: DecodedTx;
}

export class ChainState {
  readonly committed = new CommittedStores();
  readonly participants: ParticipantRecord[] = [];
  /** granter → grantees holding an authz grant for MsgStartInference (warm keys, §5.7). */
  readonly warmKeyGrants = new Map<string, Set<string>>();
  readonly txIndex = new Map<string, IndexedTx>();
  /** tx hash → account number its signature was verified with at CheckTx (DeliverTx skips re-verifying). */
  readonly verifiedSignatures = new Map<string, bigint>();

  constructor(
    readonly chainId: string,
    readonly faults: Faults,
    public params: DevnetParams,
  ) {}

  /** Params as queries and txs see them: the base params with the allowlist fault applied. */
  effectiveParams(): DevnetParams {
    const removed = this.faults.settings.removedCreators;
    if (!removed?.length) return this.params;
    const p = structuredClone(this.params);
    p.devshardEscrow.allowedCreatorAddresses = p.devshardEscrow.allowedCreatorAddresses.filter(
      (a) => !removed.includes(a),
    );
    return p;
  }

  participant(address: string): ParticipantRecord | undefined {
    return this.participants.find((p) => p.address === address);
  }

  /** The model's epoch group validation weights; empty when the model is not in the epoch. */
  epochGroupWeights(modelId: string): WeightEntry[] {
    if (this.faults.isModelMissing(modelId)) return [];
    return this.participants
      .filter((p) => p.models.includes(modelId))
      .map((p) => ({ address: p.address, weight: p.weight }));
  }

  /** Models served in the current epoch (some participant serves it and it is not faulted out). */
  servedModels(): string[] {
    const models = new Set<string>();
    for (const p of this.participants) for (const m of p.models) models.add(m);
    return [...models].filter((m) => !this.faults.isModelMissing(m));
  }

  hasWarmKeyGrant(granter: string, grantee: string): boolean {
    return this.warmKeyGrants.get(granter)?.has(grantee) ?? false;
  }

  grantWarmKey(granter: string, grantee: string): void {
    const grantees = this.warmKeyGrants.get(granter) ?? new Set<string>();
    grantees.add(grantee);
    this.warmKeyGrants.set(granter, grantees);
  }

  isAllowedEscrowCreator(params: DevnetParams, address: string): boolean {
    const list = params.devshardEscrow.allowedCreatorAddresses;
    return list.length === 0 || list.includes(address);
  }
}
