// Test support of the escrow runtime (behind the `./testing` export, never in the production face).
export { type CommitCutProxy, startCommitCutProxy } from './commit-cut-proxy.js';
