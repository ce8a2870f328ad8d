// Replica snapshots (architecture §2 item 5): a SessionState as bytes, so reopening a long
// session starts from the state at a stored nonce instead of replaying every diff from nonce 1. The
// encoding is built from the records' public fields and rebuilt through their constructor
// (`makeRecord`) and `withRoot`, so it does not depend on how records or the live hash are kept in
// memory. Decoding recomputes the §6 state root from the decoded fields and refuses the snapshot
// unless it equals the root written into it; the session layer additionally compares it with the
// stored diff root at that nonce (session/snapshots.ts). Non-hashed fields (started ids, log-plane
// memory, vote style, finalize nonce) are covered by a SHA-256 checksum over the whole encoding.
import { sha256 } from '@gonka-gateway/chain';
import { DevshardError, DevshardErrorCode } from '../errors.js';
import type { HeightSyncCommit } from '../hash/rest-hash.js';
import type { SessionPhase } from '../hash/root-formula.js';
import { CONFIRMED_AT_HEIGHT_FIELD, STARTED_AT_HEIGHT_FIELD } from '../proto/inference-record.js';
import { buildGroup } from './group.js';
import {
  type IdLog,
  idLogForEachRun,
  idLogHas,
  idLogOfAscending,
  idLogOfRuns,
  idLogRunCount,
} from './id-log.js';
import { profileForTag } from './profile.js';
import { fieldsOf, makeRecord, Record } from './record.js';
import { EntryReader, PROMPT_HASH_FIELD, RESPONSE_HASH_FIELD, type StoredInt } from './record-entry.js';
import { liveRecordsAscending, withRoot } from './root.js';
import { SnapshotReader, SnapshotWriter } from './snapshot-bytes.js';
import type {
  HostStats,
  InferenceRecord,
  InferenceStatus,
  SessionConfig,
  SessionState,
  VoteSigStyle,
} from './types.js';

/** First byte of every snapshot; a reader refuses any other value (the caller then replays fully). */
export const SNAPSHOT_FORMAT_VERSION = 2;
/** The format before started ids were written as runs: one delta per id (still read). */
const SNAPSHOT_FORMAT_PER_ID = 1;

const VOTE_STYLES: readonly VoteSigStyle[] = ['unknown', 'plain', 'tagged'];
const CHECKSUM_BYTES = 32;

function malformed(detail: string): never {
  throw new DevshardError(DevshardErrorCode.Malformed, `snapshot: ${detail}`);
}

function writeConfig(w: SnapshotWriter, c: SessionConfig): void {
  w.big(c.tokenPrice);
  w.big(c.createDevshardFee);
  w.big(c.feePerNonce);
  w.uint(c.voteThreshold);
  w.uint(c.validationRate);
  w.big(c.sealGraceNonces);
  w.big(c.sealGraceSeconds);
  w.big(c.autoSealEveryNNonces);
  w.big(c.refusalTimeout);
  w.big(c.executionTimeout);
  w.big(c.maxTokensFloor);
}

function readConfig(r: SnapshotReader): SessionConfig {
  return Object.freeze({
    tokenPrice: r.big(),
    createDevshardFee: r.big(),
    feePerNonce: r.big(),
    voteThreshold: r.uint(),
    validationRate: r.uint(),
    sealGraceNonces: r.big(),
    sealGraceSeconds: r.big(),
    autoSealEveryNNonces: r.big(),
    refusalTimeout: r.big(),
    executionTimeout: r.big(),
    maxTokensFloor: r.big(),
  });
}

/** UTF-8 bytes of the model names written (records of one model share its name), bounded. */
const modelBytes = new Map<string, Uint8Array>();
const MODEL_BYTES_LIMIT = 1_024;
const utf8 = new TextEncoder();

function writeModel(w: SnapshotWriter, model: string): void {
  let bytes = modelBytes.get(model);
  if (bytes === undefined) {
    bytes = utf8.encode(model);
    if (modelBytes.size < MODEL_BYTES_LIMIT) modelBytes.set(model, bytes);
  }
  w.bytes(bytes);
}

/**
 * writeRecord's bytes for a compact Record, read in one pass over its entry: no field object, no
 * bigint per field, no array per hash (a snapshot of 20,000 live records took ~0.1 s through
 * fieldsOf, once every snapshotEvery diffs on the session's thread). Varints are copied as
 * values (a uint64 field's proto varint and the snapshot's are both LEB128 of the same value).
 */
function writeCompactRecord(w: SnapshotWriter, record: Record): void {
  const entry = record.entryText;
  const reader = new EntryReader(entry);
  let promptFrom = 0;
  let promptTo = 0;
  let responseFrom = 0;
  let responseTo = 0;
  // Fields 7–12, 15, 16, 18, 19 by number; absent = 0 (proto3 omits zeros).
  const ints = entryInts;
  ints.fill(0);
  for (let field = reader.next(); field !== -1; field = reader.next()) {
    if (field === PROMPT_HASH_FIELD || field === RESPONSE_HASH_FIELD) {
      const length = Number(reader.varint());
      const from = reader.at;
      reader.at += length;
      if (field === PROMPT_HASH_FIELD) {
        promptFrom = from;
        promptTo = reader.at;
      } else {
        responseFrom = from;
        responseTo = reader.at;
      }
    } else if (field < ints.length && ENTRY_INT_FIELDS[field]) {
      ints[field] = reader.varint();
    } else {
      reader.skip(field); // kept beside the entry
    }
  }
  w.storedBig(Record.idKey(record));
  w.byte(record.status);
  w.uint(record.executorSlot);
  writeModel(w, record.model);
  w.latin1Bytes(entry, promptFrom, promptTo);
  w.latin1Bytes(entry, responseFrom, responseTo);
  for (let field = 7; field <= 12; field++) w.storedBig(ints[field]!);
  w.storedInt(Record.startedAtKey(record));
  w.storedInt(Record.confirmedAtKey(record));
  w.uint(Number(ints[15]));
  w.uint(Number(ints[16]));
  w.storedBig(Record.validatedByKey(record));
  w.storedBig(ints[STARTED_AT_HEIGHT_FIELD]!);
  w.storedBig(ints[CONFIRMED_AT_HEIGHT_FIELD]!);
}

/** Entry fields writeCompactRecord reads as varints (the others are kept beside the entry or bytes). */
const ENTRY_INT_FIELDS: readonly boolean[] = (() => {
  const read: boolean[] = [];
  for (const field of [7, 8, 9, 10, 11, 12, 15, 16, STARTED_AT_HEIGHT_FIELD, CONFIRMED_AT_HEIGHT_FIELD])
    read[field] = true;
  return read;
})();
/** Reused by writeCompactRecord (synchronous, so never shared by two records at once). */
const entryInts: StoredInt[] = new Array(
  Math.max(STARTED_AT_HEIGHT_FIELD, CONFIRMED_AT_HEIGHT_FIELD) + 1,
).fill(0);

function writeRecord(w: SnapshotWriter, record: InferenceRecord): void {
  if (record instanceof Record) {
    writeCompactRecord(w, record);
    return;
  }
  const x = fieldsOf(record);
  w.big(x.id);
  w.byte(x.status);
  w.uint(x.executorSlot);
  w.string(x.model);
  w.bytes(x.promptHash);
  w.bytes(x.responseHash);
  w.big(x.inputLength);
  w.big(x.maxTokens);
  w.big(x.inputTokens);
  w.big(x.outputTokens);
  w.big(x.reservedCost);
  w.big(x.actualCost);
  w.int(x.startedAt);
  w.int(x.confirmedAt);
  w.uint(x.votesValid);
  w.uint(x.votesInvalid);
  w.big(x.validatedBy);
  w.big(x.startedAtHeight);
  w.big(x.confirmedAtHeight);
}

function readRecord(r: SnapshotReader, slotCount: number): InferenceRecord {
  const id = r.big();
  const status = r.byte();
  if (status > 6) malformed(`status ${status}`);
  const executorSlot = r.uint();
  if (executorSlot >= slotCount) malformed(`executor slot ${executorSlot}`);
  return makeRecord({
    id,
    status: status as InferenceStatus,
    executorSlot,
    model: r.string(),
    promptHash: r.bytes(),
    responseHash: r.bytes(),
    inputLength: r.big(),
    maxTokens: r.big(),
    inputTokens: r.big(),
    outputTokens: r.big(),
    reservedCost: r.big(),
    actualCost: r.big(),
    startedAt: r.int(),
    confirmedAt: r.int(),
    votesValid: r.uint(),
    votesInvalid: r.uint(),
    validatedBy: r.big(),
    startedAtHeight: r.big(),
    confirmedAtHeight: r.big(),
  });
}

function writeHeightSync(w: SnapshotWriter, h: HeightSyncCommit): void {
  w.big(h.forcedStart);
  w.big(h.forcedEnd);
  w.big(h.swallowUntil);
  w.big(h.swallowFe);
  w.big(h.turnK);
  w.big(h.turnSlots);
  w.string(h.reason);
}

function readHeightSync(r: SnapshotReader): HeightSyncCommit {
  return Object.freeze({
    forcedStart: r.big(),
    forcedEnd: r.big(),
    swallowUntil: r.big(),
    swallowFe: r.big(),
    turnK: r.big(),
    turnSlots: r.big(),
    reason: r.string(),
  });
}

/** Live records encoded between two yields of `encodeStateSnapshotSteps`. */
export const SNAPSHOT_RECORDS_PER_STEP = 1_000;

/** Encodes the replica at `state.latestNonce`, with its root and a checksum. */
export function encodeStateSnapshot(state: SessionState): Uint8Array {
  const steps = encodeStateSnapshotSteps(state);
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/**
 * The same encoding in steps: yields after every SNAPSHOT_RECORDS_PER_STEP live records, so a caller
 * can give the event loop back between steps (20,000 live records take ~25–60 ms to encode).
 */
export function* encodeStateSnapshotSteps(state: SessionState): Generator<void, Uint8Array, void> {
  const w = new SnapshotWriter();
  w.byte(SNAPSHOT_FORMAT_VERSION);
  w.string(state.escrowId);
  w.string(state.tag);
  w.string(state.creator);
  writeConfig(w, state.config);
  w.uint(state.group.slots.length);
  for (const address of state.group.slots) w.string(address);
  w.big(state.balance);
  w.big(state.fees);
  w.byte(state.phase);
  w.big(state.finalizeNonce);
  w.big(state.latestNonce);

  const records = liveRecordsAscending(state.inferences);
  w.uint(records.length);
  for (let i = 0; i < records.length; i++) {
    writeRecord(w, records[i]!);
    if ((i + 1) % SNAPSHOT_RECORDS_PER_STEP === 0) yield;
  }

  // Started ids ascend (id = nonce of its diff) in runs of consecutive ids: each run is its gap from
  // the previous one and its length, a few bytes per gap whatever the nonce (one delta per id made
  // a snapshot at nonce 1,000,000 a megabyte and a million writes).
  w.uint(idLogRunCount(state.startedIds));
  let previous = 0n;
  idLogForEachRun(state.startedIds, (first, last) => {
    w.big(first - previous);
    w.big(last - first);
    previous = last;
  });

  w.uint(state.hostStats.length);
  for (const h of state.hostStats) {
    w.uint(h.missed);
    w.uint(h.invalid);
    w.big(h.cost);
    w.uint(h.requiredValidations);
    w.uint(h.completedValidations);
  }
  const warm = [...state.warmKeys].sort((a, b) => a[0] - b[0]);
  w.uint(warm.length);
  for (const [slot, address] of warm) {
    w.uint(slot);
    w.string(address);
  }
  w.raw(state.sealedAcc);
  writeHeightSync(w, state.heightSync);
  w.big(state.heightSyncLog.maxTurnSeq);
  w.uint(state.heightSyncLog.heartbeatTurns.size);
  for (const [nonce, turn] of state.heightSyncLog.heartbeatTurns) {
    w.big(nonce);
    w.big(turn);
  }
  w.byte(VOTE_STYLES.indexOf(state.voteSigStyle));
  w.raw(state.root);
  const body = w.finish();
  const out = new Uint8Array(body.length + CHECKSUM_BYTES);
  out.set(body);
  out.set(sha256(body), body.length);
  return out;
}

/** The root a snapshot claims (the §6 root after its nonce), without decoding the rest. */
export function snapshotClaimedRoot(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 1 + 2 * CHECKSUM_BYTES) malformed('too short');
  return bytes.slice(bytes.length - 2 * CHECKSUM_BYTES, bytes.length - CHECKSUM_BYTES);
}

/** Started ids as runs (format 2): count, then per run its gap from the previous run and length − 1. */
function readIdRuns(r: SnapshotReader): { startedIds: IdLog; last: bigint } {
  const count = r.uint();
  const runs: bigint[] = new Array(2 * count);
  let id = 0n;
  for (let i = 0; i < count; i++) {
    const gap = r.big();
    if (gap === 0n) malformed('started ids not ascending');
    const first = id + gap;
    id = first + r.big();
    runs[2 * i] = first;
    runs[2 * i + 1] = id;
  }
  return { startedIds: idLogOfRuns(runs), last: id };
}

/** Started ids one delta each (format 1). */
function readIdsPerId(r: SnapshotReader): { startedIds: IdLog; last: bigint } {
  const idCount = r.uint();
  const ids: bigint[] = new Array(idCount);
  let id = 0n;
  for (let i = 0; i < idCount; i++) {
    const delta = r.big();
    if (delta === 0n) malformed('started ids not ascending');
    id += delta;
    ids[i] = id;
  }
  return { startedIds: idLogOfAscending(ids), last: id };
}

/**
 * Decodes a snapshot and rebuilds every derived value (records' encodings, live hash, group indexes,
 * profile, root). Throws DevshardError `malformed` on an unknown version, a bad checksum, a corrupt
 * encoding or when the recomputed root differs from the root written into the snapshot.
 */
export function decodeStateSnapshot(bytes: Uint8Array): SessionState {
  const steps = decodeStateSnapshotSteps(bytes);
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/**
 * The same decoding in steps: yields after every SNAPSHOT_RECORDS_PER_STEP records, so a caller can
 * give the event loop back (a lease keeps renewing while a long session opens; architecture §2 item 1).
 */
export function* decodeStateSnapshotSteps(bytes: Uint8Array): Generator<void, SessionState, void> {
  if (bytes.length < 1 + 2 * CHECKSUM_BYTES) malformed('too short');
  const version = bytes[0];
  if (version !== SNAPSHOT_FORMAT_VERSION && version !== SNAPSHOT_FORMAT_PER_ID)
    malformed(`unknown format version ${version}`);
  const body = bytes.subarray(0, bytes.length - CHECKSUM_BYTES);
  const checksum = bytes.subarray(bytes.length - CHECKSUM_BYTES);
  if (!Buffer.from(sha256(body)).equals(Buffer.from(checksum))) malformed('checksum mismatch');

  const r = new SnapshotReader(body);
  r.byte();
  const escrowId = r.string();
  const tag = r.string();
  const creator = r.string();
  const config = readConfig(r);
  const slots: string[] = [];
  const slotCount = r.uint();
  for (let i = 0; i < slotCount; i++) slots.push(r.string());
  const group = buildGroup(slots);
  const balance = r.big();
  const fees = r.big();
  const phase = r.byte();
  if (phase > 2) malformed(`phase ${phase}`);
  const finalizeNonce = r.big();
  const latestNonce = r.big();

  const inferences = new Map<bigint, InferenceRecord>();
  const recordCount = r.uint();
  let lastId = -1n;
  for (let i = 0; i < recordCount; i++) {
    const record = readRecord(r, slotCount);
    if (record.id <= lastId) malformed('records not in ascending id');
    lastId = record.id;
    inferences.set(record.id, record);
    if ((i + 1) % SNAPSHOT_RECORDS_PER_STEP === 0) yield;
  }

  const { startedIds, last: id } = version === SNAPSHOT_FORMAT_PER_ID ? readIdsPerId(r) : readIdRuns(r);
  yield;
  if (id > latestNonce || lastId > latestNonce) malformed('id beyond the latest nonce');
  for (const liveId of inferences.keys()) {
    if (!idLogHas(startedIds, liveId)) malformed(`live id ${liveId} was never started`);
  }

  const statsCount = r.uint();
  if (statsCount !== slotCount) malformed('host stats do not cover every slot');
  const hostStats: HostStats[] = [];
  for (let i = 0; i < statsCount; i++) {
    hostStats.push(
      Object.freeze({
        missed: r.uint(),
        invalid: r.uint(),
        cost: r.big(),
        requiredValidations: r.uint(),
        completedValidations: r.uint(),
      }),
    );
  }
  const warmKeys = new Map<number, string>();
  const warmCount = r.uint();
  for (let i = 0; i < warmCount; i++) {
    const slot = r.uint();
    if (slot >= slotCount || warmKeys.has(slot)) malformed(`warm key slot ${slot}`);
    warmKeys.set(slot, r.string());
  }
  const sealedAcc = r.raw(32);
  const heightSync = readHeightSync(r);
  const maxTurnSeq = r.big();
  const heartbeatTurns = new Map<bigint, bigint>();
  const turnCount = r.uint();
  for (let i = 0; i < turnCount; i++) heartbeatTurns.set(r.big(), r.big());
  const voteSigStyle = VOTE_STYLES[r.byte()] ?? malformed('vote style');
  const claimedRoot = r.raw(32);
  if (!r.done) malformed('trailing bytes');

  const state = withRoot({
    escrowId,
    tag,
    profile: profileForTag(tag),
    creator,
    config,
    group,
    balance,
    fees,
    phase: phase as SessionPhase,
    finalizeNonce,
    latestNonce,
    inferences,
    startedIds,
    hostStats: Object.freeze(hostStats),
    warmKeys,
    sealedAcc,
    heightSync,
    heightSyncLog: { maxTurnSeq, heartbeatTurns },
    voteSigStyle,
  });
  if (!Buffer.from(state.root).equals(Buffer.from(claimedRoot))) {
    malformed(`recomputed root differs from the snapshot's root at nonce ${latestNonce}`);
  }
  return state;
}
