// §12 #1 (devshard-protocol.md): the v5 record height fields are assumed to be numbers 18 and 19
// (golden vector: proto/inference-record-heights.golden.test.ts). Until a host's state_hash at or
// after the first height-stamped diff matched our root, a root mismatch there most likely means the
// hosts number those fields differently, not that a host cheats. The session then stops with its own
// code, `stamp_layout_mismatch`, so the owner sees which assumption broke (and can pin the tag's
// profile or disable stamps) instead of a bare `diverged`.

import { SessionError, SessionErrorCode } from './errors.js';
import type { Replica } from './replica.js';

/** A mismatch at `nonce` falls on a stamped root we have not yet seen a host agree with. */
export function isUncalibratedStampRoot(replica: Replica, nonce: bigint): boolean {
  const first = replica.stamps.firstStampNonce;
  return first !== undefined && !replica.stamps.calibrated && nonce >= first;
}

/** The fault for a root mismatch at `nonce`: stamp layout while uncalibrated, else divergence. */
export function rootMismatchFault(
  replica: Replica,
  host: string,
  nonce: bigint,
  detail: string,
): SessionError {
  if (isUncalibratedStampRoot(replica, nonce)) {
    return new SessionError(
      SessionErrorCode.StampLayoutMismatch,
      `host ${host} at nonce ${nonce} (first height-stamped diff ${replica.stamps.firstStampNonce}): ${detail}; ` +
        'the v5 record height fields 18/19 (§12 #1) likely differ from the hosts',
    );
  }
  return new SessionError(SessionErrorCode.Diverged, `host ${host} at nonce ${nonce}: ${detail}`);
}
