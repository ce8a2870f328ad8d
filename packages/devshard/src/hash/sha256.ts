// SHA-256 over several parts. OpenSSL (node:crypto) rather than the pure-JS hash: the live-record
// hash of §6 covers every live record on every diff. Small inputs (the root's component hashes of
// §6, a prompt, a request preimage: ~6 per diff) are copied into one reused buffer and hashed in
// one call (crypto.hash, Node ≥ 20.12): a Hash object per call costs more than the copy.
import * as crypto from 'node:crypto';

const oneShot = (crypto as { hash?: (alg: string, data: Uint8Array, enc: 'buffer') => Buffer }).hash;

/** Parts up to this many bytes in total are joined in `scratch`; larger ones are streamed. */
const JOIN_MAX = 16 * 1024;
let scratch = Buffer.allocUnsafe(1024);

/** A digest Buffer owns its own 32-byte ArrayBuffer (never the shared pool): a plain view of it. */
const view = (digest: Buffer) => new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);

export function sha256Parts(...parts: readonly Uint8Array[]): Uint8Array {
  if (oneShot !== undefined) {
    if (parts.length === 1) return view(oneShot('sha256', parts[0]!, 'buffer'));
    let total = 0;
    for (const p of parts) total += p.length;
    if (total <= JOIN_MAX) {
      if (total > scratch.length) scratch = Buffer.allocUnsafe(JOIN_MAX);
      let at = 0;
      for (const p of parts) {
        scratch.set(p, at);
        at += p.length;
      }
      // crypto.hash reads its input synchronously: the scratch buffer is free again on return.
      return view(oneShot('sha256', scratch.subarray(0, total), 'buffer'));
    }
  }
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p);
  return view(h.digest());
}
