// Signed POST authentication of the host routes (devshard-protocol.md §2.4 request header, §4.1):
// X-Devshard-Signature = lowercase hex of the 65-byte Sign(sha256(escrow_id ‖ body ‖ u64be(ts))),
// X-Devshard-Timestamp = unix seconds within ±30 s of the host clock. Failing to produce a signer is
// 401 (as the reference's auth middleware answers); who may call a route (creator only, or creator
// or group member) is the route's 403 decision. One recovery per request, never more.

import type { IncomingHttpHeaders } from 'node:http';
import { recoverRequestSigner } from '@gonka-gateway/devshard';

/** Allowed drift between the request timestamp and the host clock (§4.1). */
export const MAX_CLOCK_DRIFT_SECONDS = 30n;

const SIGNATURE_HEX = /^[0-9a-f]{130}$/;
const UNIX_SECONDS = /^(0|[1-9][0-9]{0,18})$/;

export type AuthResult = { readonly signer: string } | { readonly status: 401; readonly message: string };

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function authenticateRequest(
  headers: IncomingHttpHeaders,
  escrowId: string,
  body: Uint8Array,
  nowSeconds: bigint,
): AuthResult {
  const sigHex = header(headers, 'x-devshard-signature');
  const tsText = header(headers, 'x-devshard-timestamp');
  if (sigHex === undefined || tsText === undefined) return { status: 401, message: 'missing auth headers' };
  if (!SIGNATURE_HEX.test(sigHex)) return { status: 401, message: 'invalid signature hex' };
  if (!UNIX_SECONDS.test(tsText)) return { status: 401, message: 'invalid timestamp' };
  const ts = BigInt(tsText);
  const drift = ts > nowSeconds ? ts - nowSeconds : nowSeconds - ts;
  if (drift > MAX_CLOCK_DRIFT_SECONDS) return { status: 401, message: 'timestamp outside the allowed drift' };
  const signer = recoverRequestSigner(escrowId, body, ts, sigHex);
  if (signer === null) return { status: 401, message: 'invalid signature' };
  return { signer };
}
