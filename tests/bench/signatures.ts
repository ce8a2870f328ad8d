// Cost of the signature operations every devshard request performs (sign diff + request header;
// recover receipts, finishes, state signatures), per backend. Not a test: nothing is asserted.
import { randomBytes } from 'node:crypto';
import { loadNativeBackend, nobleBackend, sha256 } from '@gonka-gateway/chain';

function perOp(f: () => void, iterations: number): number {
  for (let i = 0; i < Math.min(50, iterations); i++) f(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) f();
  return ((performance.now() - t0) / iterations) * 1000;
}

export function signatureBench(): string[] {
  const key = new Uint8Array(randomBytes(32));
  const digest = sha256(randomBytes(300));
  const lines = ['signature operations (one core, 300-byte message digest):'];
  for (const backend of [loadNativeBackend(), nobleBackend]) {
    if (!backend) continue;
    const n = backend.name === 'native' ? 5000 : 300;
    const { signature, recid } = backend.sign(digest, key);
    const sign = perOp(() => backend.sign(digest, key), n);
    const recover = perOp(() => backend.recover(digest, signature, recid), n);
    lines.push(
      `  ${backend.name.padEnd(7)} sign ${sign.toFixed(1).padStart(7)} µs   recover ${recover.toFixed(1).padStart(7)} µs`,
    );
  }
  return lines;
}
