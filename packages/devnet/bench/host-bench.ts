// Manual measurement of what a devshard host costs per request (not a test: nothing is asserted).
//   pnpm tsx --conditions=source packages/devnet/bench/host-bench.ts [inferences]
// Host time is measured on the host's own HTTP server, from the request's arrival to the end of the
// response, with a zero-latency mock model, so it is protocol work (auth, apply, signing, SSE) only.
import { recoverAddress, sha256 } from '@gonka-gateway/chain';
import { promptHash } from '@gonka-gateway/devshard';
import { signStateRoot } from '@gonka-gateway/devshard/host';
import type { ParticipantPlugin } from '../src/participant/participant-server.js';
import { account, startTestDevnet } from '../src/testing/test-devnet.js';
import { chatBody, TestUser } from '../src/testing/test-user.js';

const runs = Number(process.argv[2] ?? 200);
const samples: Array<{ route: string; ms: number }> = [];
const timing: ParticipantPlugin = async (app) => {
  app.server.on('request', (req, res) => {
    const t0 = performance.now();
    res.on('close', () => samples.push({ route: req.url ?? '', ms: performance.now() - t0 }));
  });
};

const devnet = await startTestDevnet({ participantPlugins: [timing] });
devnet.chain.updateParams((p) => {
  p.devshardEscrow.maxEscrowsPerEpoch = 1_000n;
});
const user = await TestUser.open(devnet);

function stats(label: string, values: number[]): void {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  console.log(
    `${label.padEnd(48)} n=${String(values.length).padStart(4)}  mean ${mean.toFixed(2).padStart(6)} ms  p50 ${at(0.5).toFixed(2).padStart(6)}  p90 ${at(0.9).toFixed(2).padStart(6)}`,
  );
}

// Primitives, for scale.
const key = account(devnet, 'creator-0').key;
const digest = sha256(new TextEncoder().encode('bench'));
const sig = key.signDigest65(digest);
const prompt = chatBody('How many slots does a devshard escrow have?');
const prim = (label: string, n: number, fn: () => unknown) => {
  for (let i = 0; i < 20; i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  console.log(`${label.padEnd(48)} ${(((performance.now() - t0) * 1000) / n).toFixed(1).padStart(8)} µs`);
};
prim('secp256k1 recovery + address (chain backend)', 200, () => recoverAddress(digest, sig));
prim('secp256k1 sign, 65 bytes', 200, () => key.signDigest65(digest));
prim('state signature (encode + sha256 + sign)', 200, () => signStateRoot(key, digest, '1', 1n));
prim('prompt hash of a small chat body', 2000, () => promptHash(prompt));

// Warm-up, then measured inferences (every one also carries the previous Confirm + Finish).
for (let i = 0; i < 20; i++) await user.infer(`warm-up ${i}`);
samples.length = 0;
const clientMs: number[] = [];
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  await user.infer(`measured question ${i}`, { stream: i % 2 === 0 });
  clientMs.push(performance.now() - t0);
}
const chat = samples.filter((s) => s.route.endsWith('/chat/completions')).map((s) => s.ms);
stats('host: chat with payload (executor, 1 diff)', chat);
stats('round trip seen by the user (compose+sign+HTTP)', clientMs);

// Catch-up without payload: one host receives the diffs it missed.
samples.length = 0;
for (const address of user.hostAddresses) await user.chat(address);
for (let i = 0; i < runs; i++) {
  await user.tick();
}
stats(
  'host: send without payload (1 diff, no exec)',
  samples.filter((s) => s.route.endsWith('/chat/completions')).map((s) => s.ms),
);
samples.length = 0;
for (let i = 0; i < runs; i++)
  await fetch(`${user.url(user.hostAddresses[0]!, 'signatures')}?nonce=${i + 1}`);
stats(
  'host: GET signatures (signs once per nonce)',
  samples.map((s) => s.ms),
);
await devnet.close();
