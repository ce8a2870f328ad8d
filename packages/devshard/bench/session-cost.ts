// What a user session costs per request as its nonce grows (docs/performance.md), not a test: nothing is
// asserted. A real UserSession (in-memory store) over in-process hosts (16 slots, 5 hosts, the
// hosts' strict apply and signing in the same thread): the session is driven to the nonce, then
// `requests` sequential inferences are measured. Session CPU = main-thread CPU (and whole-process
// CPU, GC threads included) during infer() minus the CPU spent inside the hosts' chat calls, which
// run on the same thread.
// One process per nonce, so the RSS growth printed is that run's (session + 5 host replicas + store).
// The process holds all three, so memory is also split by dropping them one at a time after the run
// (run with --expose-gc): heap + external bytes freed by letting go of the UserSession (what the
// session itself retains: state, diff window, caches), then of the in-process hosts; what is left
// above the baseline taken before setup is the in-memory store (every diff, payload, snapshot).
//   pnpm --filter @gonka-gateway/devshard bench:session -- 1000 [requests] [--sealing]
import type { UserSession } from '../src/session/user-session.js';
import { request, setup } from '../src/testing/session-setup.js';
import { measureWindow, meterHosts, nextTurn } from './session-meter.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const sealing = args.includes('--sealing');
const [nonceArg, requestsArg] = args.filter((a) => !a.startsWith('--'));
const target = Number(nonceArg ?? 1_000);
const requests = Number(requestsArg ?? 200);

const gc = (globalThis as { gc?: () => void }).gc;
/** Heap + off-heap (Buffers) bytes after full collections; NaN without --expose-gc. */
async function retainedBytes(): Promise<number> {
  if (!gc) return Number.NaN;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}
const base = await retainedBytes();
let t: ReturnType<typeof setup> | undefined = setup({
  amount: 10n ** 15n,
  // All records live (grace far beyond the run), or sealed 20 nonces / 1 s after they finish.
  row: sealing
    ? { inferenceSealGraceNonces: 20n, inferenceSealGraceSeconds: 1n }
    : { inferenceSealGraceNonces: 1_000_000_000n, inferenceSealGraceSeconds: 1_000_000_000n },
});
await t.init();
const clock = t.clock;
// The in-process hosts run on this thread: count their CPU apart (main thread and process).
const meter = meterHosts(t.net);
let s: UserSession | undefined = await t.open({ maxNonce: 1_000_000n });
gc?.();
const rss0 = process.memoryUsage().rss;
while (s.latestNonce < BigInt(target)) {
  await s.infer(request());
  if (sealing) clock.advance(1);
  await nextTurn();
}
gc?.();
const rssAtTarget = process.memoryUsage().rss;

const cost = await measureWindow(s, t.net, meter, requests, () => {
  if (sealing) clock.advance(1);
});
const live = s.state.inferences.size;
const rssAfterRun = process.memoryUsage().rss;

// Memory split: everything, then without the session, then without the hosts too.
const all = await retainedBytes();
await s.close();
const sessionRef = new WeakRef(s);
s = undefined;
const withoutSession = await retainedBytes();
const store = t.store;
const netRef = new WeakRef(t.net);
t = undefined;
const storeOnly = await retainedBytes();
const mb = (b: number) => Number((b / 2 ** 20).toFixed(1));
console.log(
  JSON.stringify({
    nonce: target,
    sealing,
    live,
    ...cost,
    rssGrowthMB: mb(rssAtTarget - rss0),
    rssAfterRunMB: mb(rssAfterRun),
    sessionMB: mb(all - withoutSession),
    hostsMB: mb(withoutSession - storeOnly),
    storeMB: mb(storeOnly - base),
    // Both must be true, or the split above is wrong (something still holds them).
    sessionFreed: sessionRef.deref() === undefined,
    hostsFreed: netRef.deref() === undefined,
    storeKept: store !== undefined,
  }),
);
