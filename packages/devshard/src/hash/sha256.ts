// SHA-256 over several parts without concatenating them first. OpenSSL (node:crypto) rather than the
// pure-JS hash: the live-record hash of §6 covers every live record on every diff.
import { createHash } from 'node:crypto';

export function sha256Parts(...parts: readonly Uint8Array[]): Uint8Array {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}
