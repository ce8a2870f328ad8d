// Signed-preimage styles. The pinned v5 revision signs the bare deterministic proto; a later revision
// prefixes an ASCII domain tag to four messages (devshard-protocol.md §11). Verification may accept
// either (§12 #6, see state/vote-style.ts); signing uses the session's style.

export type PreimageStyle = 'plain' | 'tagged';

export const DOMAIN_VALIDATION = 'devshard.validation.v1';
export const DOMAIN_VALIDATION_VOTE = 'devshard.validationvote.v1';
export const DOMAIN_TIMEOUT_VOTE = 'devshard.timeoutvote.v1';
export const DOMAIN_ERROR_MISS_VOTE = 'devshard.errormissvote.v1';
/** Height-ack host_sig domain (always prefixed, §2.4). */
export const DOMAIN_HEIGHT_ACK = 'heightsync.ack.v1';

const encoder = new TextEncoder();

export function withDomain(style: PreimageStyle, domain: string, body: Uint8Array): Uint8Array {
  if (style === 'plain') return body;
  const tag = encoder.encode(domain);
  const out = new Uint8Array(tag.length + body.length);
  out.set(tag, 0);
  out.set(body, tag.length);
  return out;
}
