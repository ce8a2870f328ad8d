// Test support: drive a session through the composer and a strict host together.
import { expect } from 'vitest';
import type { DevshardErrorCode } from '../errors.js';
import type { EncodedTx } from '../proto/devshard-tx.js';
import { signDiff } from '../signing/diff.js';
import type { ApplyContext } from '../state/apply-context.js';
import { applyDiff } from '../state/apply-diff.js';
import { composeDiff } from '../state/compose.js';
import type { SessionState } from '../state/types.js';
import type { Fixture } from './session-fixture.js';

/** Composes each step (no drops allowed), applies it strictly too, and returns the final state. */
export function run(
  f: Fixture,
  steps: readonly (readonly EncodedTx[])[],
  ctx: ApplyContext = {},
  from?: SessionState,
) {
  let state = from ?? f.state;
  for (const txs of steps) {
    const composed = composeDiff(state, txs, ctx);
    expect(composed.dropped.map((d) => d.error.message)).toEqual([]);
    const hosted = applyDiff(state, signDiff(f.user, f.escrowId, composed.diff), ctx);
    expect(hosted.state.root).toEqual(composed.state.root);
    state = composed.state;
  }
  return state;
}

/**
 * The strict path rejects the diff with `code`; the composer either aborts with `code` (a failing
 * Start, diff framing, only log-plane-invalid txs) or drops the offending tx with `code`.
 */
export function expectRejected(
  f: Fixture,
  state: SessionState,
  txs: readonly EncodedTx[],
  code: DevshardErrorCode,
  ctx: ApplyContext = {},
) {
  const diff = signDiff(f.user, f.escrowId, {
    nonce: state.latestNonce + 1n,
    txs,
    postStateRoot: new Uint8Array(0),
  });
  expect(() => applyDiff(state, diff, ctx)).toThrow(expect.objectContaining({ code }));
  let composed: ReturnType<typeof composeDiff>;
  try {
    composed = composeDiff(state, txs, ctx);
  } catch (error) {
    expect(error).toMatchObject({ code });
    return;
  }
  expect(composed.dropped.map((d) => d.error.code)).toContain(code);
  expect(composed.diff.txs.length).toBeLessThan(txs.length);
}
