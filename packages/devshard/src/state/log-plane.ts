// Height-sync log-plane checks (devshard-protocol.md §9), v5 only. Implemented: L1 framing, L2 ack
// signature (cold slot key), L3 ack causality, L0b confirm ≤ finish within one diff. Not
// implemented: L0, whose floor rules are not pinned (§12 #4) — honest hosts comply with it.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import type { DevshardTx } from '../proto/devshard-tx.js';
import type { MsgHeartbeat, MsgHeightAck } from '../proto/tx-messages.js';
import { recoverHeightAckSigner } from '../signing/height-ack.js';
import type { TxEnv } from './apply-context.js';
import type { HeightSyncLog, WorkingState } from './types.js';

const MAX_BLOCK_HASH = 32;

function checkFraming(n: bigint, prevTurn: bigint, hbs: MsgHeartbeat[], acks: MsgHeightAck[]): void {
  const bad = (detail: string) => new DevshardError(DevshardErrorCode.BadFraming, detail);
  for (const hb of hbs) {
    if (hb.turnSeq === 0n) throw bad('turn_seq 0');
    if (prevTurn > 0n && hb.turnSeq < prevTurn) throw bad(`turn_seq ${hb.turnSeq} < ${prevTurn}`);
    if (hb.slotsNum !== n) throw bad(`slots_num ${hb.slotsNum} != group ${n}`);
    if (hb.observedBlockHash.length > MAX_BLOCK_HASH) throw bad('observed_block_hash too long');
    if (BigInt(hb.syncVector.length) > n) throw bad('sync_vector longer than the group');
  }
  const peerSeenBytes = Number((n + 7n) / 8n);
  for (const ack of acks) {
    if (ack.turnSeq === 0n) throw bad('ack turn_seq 0');
    if (BigInt(ack.slotId) >= n) throw bad(`ack slot ${ack.slotId} >= ${n}`);
    if (ack.peerSeen.length !== peerSeenBytes) throw bad(`peer_seen length ${ack.peerSeen.length}`);
    if (ack.observedBlockHash.length > MAX_BLOCK_HASH) throw bad('ack observed_block_hash too long');
  }
}

function checkAckSignatures(s: WorkingState, acks: MsgHeightAck[], env: TxEnv): void {
  for (const ack of acks) {
    const signer = recoverHeightAckSigner(ack, env.recover);
    if (signer === null || signer !== s.group.slots[ack.slotId]) {
      throw new DevshardError(DevshardErrorCode.AckSigInvalid, `slot ${ack.slotId}`);
    }
  }
}

function checkCausality(log: HeightSyncLog, nonce: bigint, hbs: MsgHeartbeat[], acks: MsgHeightAck[]): void {
  const inDiff = hbs[0]?.turnSeq;
  for (const ack of acks) {
    const turn =
      ack.refNonce === nonce && inDiff !== undefined ? inDiff : log.heartbeatTurns.get(ack.refNonce);
    if (turn === undefined || turn !== ack.turnSeq) {
      throw new DevshardError(
        DevshardErrorCode.AckCausality,
        `ref_nonce ${ack.refNonce}, turn ${ack.turnSeq}`,
      );
    }
  }
}

/** L0b: confirm and finish are both the executor's, so within one diff finish ≥ confirm. */
function checkConfirmFinishOrder(txs: readonly DevshardTx[]): void {
  // Maps only when stamped txs are there: the composer runs this once per candidate.
  let confirms: Map<bigint, bigint> | undefined;
  let finishes: Map<bigint, bigint> | undefined;
  for (const tx of txs) {
    if (tx.kind === 'confirmStart' && tx.msg.observedBlockHash.length > 0) {
      confirms ??= new Map();
      confirms.set(tx.msg.inferenceId, tx.msg.observedHeight);
    } else if (tx.kind === 'finishInference' && tx.msg.observedBlockHash.length > 0) {
      finishes ??= new Map();
      finishes.set(tx.msg.inferenceId, tx.msg.observedHeight);
    }
  }
  if (confirms === undefined || finishes === undefined) return;
  for (const [id, finish] of finishes) {
    const confirm = confirms.get(id);
    if (confirm !== undefined && finish < confirm) {
      throw new DevshardError(
        DevshardErrorCode.HeightRegression,
        `inference ${id} finish ${finish} < ${confirm}`,
      );
    }
  }
}

/** Throws the first log-plane violation of `txs` at `nonce` against the log before this diff. */
export function checkLogPlane(s: WorkingState, nonce: bigint, txs: readonly DevshardTx[], env: TxEnv): void {
  if (!s.profile.heightStamps) return;
  const hbs: MsgHeartbeat[] = [];
  const acks: MsgHeightAck[] = [];
  for (const tx of txs) {
    if (tx.kind === 'heartbeat') hbs.push(tx.msg);
    else if (tx.kind === 'heightAck') acks.push(tx.msg);
  }
  if (hbs.length > 0 || acks.length > 0) {
    checkFraming(BigInt(s.group.slots.length), s.heightSyncLog.maxTurnSeq, hbs, acks);
    checkAckSignatures(s, acks, env);
    checkCausality(s.heightSyncLog, nonce, hbs, acks);
  }
  checkConfirmFinishOrder(txs);
}

/** Folds this diff's heartbeats into the log memory used by L1 and L3 of later diffs. */
export function observeHeartbeats(
  log: HeightSyncLog,
  nonce: bigint,
  txs: readonly DevshardTx[],
): HeightSyncLog {
  let first: bigint | undefined;
  let max = log.maxTurnSeq;
  for (const tx of txs) {
    if (tx.kind !== 'heartbeat') continue;
    first ??= tx.msg.turnSeq;
    if (tx.msg.turnSeq > max) max = tx.msg.turnSeq;
  }
  if (first === undefined) return log;
  return { maxTurnSeq: max, heartbeatTurns: new Map(log.heartbeatTurns).set(nonce, first) };
}
