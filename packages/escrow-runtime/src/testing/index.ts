// Test support of the escrow runtime (behind the `./testing` export, never in the production face).
export { type CommitCutProxy, startCommitCutProxy } from './commit-cut-proxy.js';
export { insertEscrowRows, setEscrowState, type TestEscrowRow } from './escrow-rows.js';
export { type PrivateRedis, startPrivateRedis } from './redis-server.js';
export { readSentDiffs, type SentDiff, SentDiffLog } from './sent-diff-log.js';
export { twoSlotSessionRecord } from './session-record.js';
