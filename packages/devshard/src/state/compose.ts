// The gateway (composer, "best effort") path of devshard-protocol.md §5.3: the same rules as the
// host path, but a failing non-Start candidate is dropped (with everything it would have changed,
// warm-key bindings included) instead of failing the diff. A failing Start, a failing fee check or
// a diff-level framing error aborts the composition; nothing is consumed, since state is immutable.
// The caller signs DiffContent over exactly `diff.txs` (signing/diff.ts).
import { DevshardError } from '../errors.js';
import type { DevshardTx, EncodedTx } from '../proto/devshard-tx.js';
import type { UnsignedDiff } from '../signing/diff.js';
import { type ApplyContext, txEnv } from './apply-context.js';
import { applyTx } from './apply-tx.js';
import { closeDiff } from './close-diff.js';
import { checkNonce, checkTxFraming } from './diff-checks.js';
import { type ApplyResult, newWarmKeys } from './effects.js';
import { checkLogPlane } from './log-plane.js';
import { withRoot } from './root.js';
import type { SessionState, WorkingState } from './types.js';

export interface DroppedTx {
  readonly tx: EncodedTx;
  readonly error: DevshardError;
}

export interface ComposeResult extends ApplyResult {
  /** Nonce, the applied candidates in order, and the post-state root (unless omitted). */
  readonly diff: UnsignedDiff;
  readonly dropped: readonly DroppedTx[];
}

export interface ComposeOptions {
  /**
   * Put post_state_root into the diff (default true). §12 #1: leave it out until the local root has
   * been calibrated against a host's state_hash.
   */
  readonly withPostStateRoot?: boolean;
}

/** Composes the next diff from `candidates` (already in priority order, §7.1 step 3). */
export function composeDiff(
  state: SessionState,
  candidates: readonly EncodedTx[],
  ctx: ApplyContext = {},
  options: ComposeOptions = {},
): ComposeResult {
  const nonce = state.latestNonce + 1n;
  const env = txEnv(nonce, ctx);
  checkNonce(state, nonce);
  checkTxFraming(
    nonce,
    candidates.map((c) => c.tx),
  );

  let s: WorkingState = state;
  const applied: EncodedTx[] = [];
  // The decoded txs of `applied`, then the candidate under test at the end (one list per diff
  // rather than a copy per candidate: the log-plane checks read it, nothing keeps it).
  const txs: DevshardTx[] = [];
  const dropped: DroppedTx[] = [];
  let logPlaneReject: DevshardError | undefined;
  for (const candidate of candidates) {
    const isStart = candidate.tx.kind === 'startInference';
    txs.push(candidate.tx);
    try {
      checkLogPlane(state, nonce, txs, env);
    } catch (error) {
      txs.pop();
      if (isStart || !(error instanceof DevshardError)) throw error;
      logPlaneReject = error;
      dropped.push({ tx: candidate, error });
      continue;
    }
    try {
      s = applyTx(s, candidate.tx, env);
      applied.push(candidate);
    } catch (error) {
      txs.pop();
      if (isStart || !(error instanceof DevshardError)) throw error;
      dropped.push({ tx: candidate, error });
    }
  }
  // A set of only log-plane-invalid height-sync txs must not consume a nonce.
  if (applied.length === 0 && logPlaneReject) throw logPlaneReject;

  const closed = closeDiff(s, nonce, txs);
  const next = withRoot(closed.state, state);
  return {
    state: next,
    diff: {
      nonce,
      txs: applied,
      postStateRoot: options.withPostStateRoot === false ? new Uint8Array(0) : next.root,
    },
    dropped,
    effects: {
      nonce,
      root: next.root,
      phase: next.phase,
      warmKeysBound: newWarmKeys(state, next),
      sealed: closed.sealed,
    },
  };
}
