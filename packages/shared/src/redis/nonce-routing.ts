// Where an escrow stops taking new chat for its nonce (spec §3.1 balance check; devshard-protocol.md
// §7.5): hosts reject, while the session is Active, Start/Timeout/Validation above
// max_nonce − (N + 1), so routing stops ROUTING_MARGIN nonces before that, leaving room for the
// requests in flight and the timeouts of the last inferences. max_nonce is the escrow's (its chain
// row's frozen value, else the chain params'), published by the owner in the pool entry
// (`nonce_ceiling`) with the stop (`routing_stop`). While no chain read told the owner the ceiling,
// the stop is UNKNOWN_CEILING_ROUTING_STOP — where a session on the protocol's default max_nonce
// (20,000) stops — and the balance check holds the escrow there instead of retiring it.

/** Nonces kept between the routing stop and the last nonce allowed new work (reference: 200). */
export const ROUTING_MARGIN = 200n;

/** The routing stop while the escrow's max_nonce is unknown: 20,000 − 200. */
export const UNKNOWN_CEILING_ROUTING_STOP = 19_800n;

/** max_nonce − (N + 1) − ROUTING_MARGIN for a known ceiling (N = slots), else the unknown-ceiling stop. */
export function nonceRoutingStop(maxNonce: bigint | undefined, groupSize: number): bigint {
  if (maxNonce === undefined) return UNKNOWN_CEILING_ROUTING_STOP;
  const stop = maxNonce - BigInt(groupSize + 1) - ROUTING_MARGIN;
  return stop > 0n ? stop : 0n;
}
