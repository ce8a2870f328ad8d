// Manual measurement of the session layer's own cost per request (not a test: speed is not asserted).
//   pnpm tsx --conditions=source packages/devshard/bench/session-overhead.ts
// In-process hosts (16 slots, 5 hosts), in-memory store, pure-JS secp256k1. "before send" is compose +
// sign + write-ahead + catch-up selection; "after" is receipt, state signature, Confirm/Finish checks
// and mempool intake, with the hosts' own time (strict apply, signing) subtracted.

import { UserSession } from '../src/session/user-session.js';
import { request, setup } from '../src/testing/session-setup.js';

const runs = Number(process.argv[2] ?? 200);
const t = setup({ amount: 10_000_000_000n });
await t.init();
const s = await t.open({ maxNonce: 1_000_000n });
let sentAt = 0;
t.net.onChat = () => {
  sentAt = performance.now();
};
for (let i = 0; i < 20; i++) await s.infer(request());

const before: number[] = [];
const after: number[] = [];
const firstChunk: number[] = [];
for (let i = 0; i < runs; i++) {
  const input = request();
  const hostBefore = t.net.hostMs;
  const t0 = performance.now();
  let t1 = 0;
  await s.infer(input, {
    onChunk: () => {
      t1 ||= performance.now();
    },
  });
  const t2 = performance.now();
  const host = t.net.hostMs - hostBefore;
  before.push(sentAt - t0);
  after.push(t2 - sentAt - host);
  firstChunk.push(t1 - sentAt - host);
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
const fmt = (xs: number[]) => `median ${pct(xs, 0.5).toFixed(2)} ms, p90 ${pct(xs, 0.9).toFixed(2)} ms`;
console.log(`${runs} sequential inferences, ${s.state.inferences.size} live records`);
console.log(`before send (compose + sign + persist): ${fmt(before)}`);
console.log(`after (receipt, signatures, intake):     ${fmt(after)}`);
console.log(`total session overhead:                 ${fmt(before.map((b, i) => b + after[i]!))}`);
console.log(`receipt → first chunk forwarded:        ${fmt(firstChunk)}`);

const r0 = performance.now();
const reopened = await UserSession.open({
  store: t.store,
  escrowId: s.escrowId,
  signer: t.user,
  transport: t.net,
  resolveHost: t.net.resolveHost,
  clock: t.clock,
});
const replayMs = performance.now() - r0;
console.log(
  `reopen (strict replay of ${reopened.latestNonce} diffs): ${replayMs.toFixed(0)} ms, ${(replayMs / Number(reopened.latestNonce)).toFixed(2)} ms/diff`,
);
