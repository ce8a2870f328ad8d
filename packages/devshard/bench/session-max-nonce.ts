// Session cost to max_nonce (docs/performance.md "Session cost to max_nonce"), not a test: nothing is
// asserted but the refusal at the ceiling. One UserSession (in-memory store, 16 slots on 5 in-process
// hosts, sealing on: 20 nonces and 1 s of grace, the clock moving 1 s a request, timeouts checked every
// 1,000 requests like an owner's maintenance and a flush diff every 50) is driven from nonce 0 to the chain's max_nonce
// (1,000,000, mainnet's). At each checkpoint a window of requests ending there is measured (session
// main-thread and process µs per request, hosts' share subtracted; one timeout pass), with RSS and the
// heap after full collections. The store and the hosts keep only their last 2,000 diffs
// (`keepHistory`), so what grows with the nonce is the session's (and the hosts' replicas, the same
// state code). A checkpoint past the work limit (max_nonce − 200, §7.5) is measured at the limit; then
// one more inference must be refused (`nonce_limit`).
//   pnpm bench:max-nonce [-- <checkpoint>…] [--window <requests>] [--max-nonce <n>] [--hosts <n>]
// (node --expose-gc --conditions=source --import tsx packages/devshard/bench/session-max-nonce.ts …)
import { isSessionError, SessionErrorCode } from '../src/session/errors.js';
import { request, setup } from '../src/testing/session-setup.js';
import { measureWindow, meterHosts, nextTurn } from './session-meter.js';

const argv = process.argv.slice(2).filter((a) => a !== '--');
function option(name: string, fallback: number): number {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const [value] = argv.splice(i, 2).slice(1);
  return Number(value);
}
const window = option('--window', 500);
const hosts = option('--hosts', 5);
const maxNonce = BigInt(option('--max-nonce', 1_000_000));
const checkpoints = (argv.length > 0 ? argv.map(Number) : [1_000, 100_000, 500_000, 1_000_000]).sort(
  (a, b) => a - b,
);

/** One flush diff per this many inferences while driving (not in the measured windows). */
const FLUSH_EVERY = 50;

const gc = (globalThis as { gc?: () => void }).gc;
const mb = (b: number) => Number((b / 2 ** 20).toFixed(1));
async function heapBytes(): Promise<number> {
  if (!gc) return Number.NaN;
  for (let i = 0; i < 2; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

const t = setup({
  amount: 10n ** 15n,
  maxNonce,
  hosts,
  keepHistory: 2_000,
  shareApplied: true,
  row: { inferenceSealGraceNonces: 20n, inferenceSealGraceSeconds: 1n },
});
await t.init();
const meter = meterHosts(t.net);
const session = await t.open({ maxNonce });
const tick = () => t.clock.advance(1);
const started = performance.now();
let served = 0;
for (const checkpoint of checkpoints) {
  const end = BigInt(checkpoint) < session.workLimit ? BigInt(checkpoint) : session.workLimit;
  const from = end - BigInt(window);
  while (session.latestNonce < from) {
    await session.infer(request());
    tick();
    await nextTurn();
    served++;
    // Like an owner's maintenance: timeouts checked; now and then a flush of what waits (an idle
    // spell), a diff without a Start, so the started ids have gaps as in production.
    if (served % 1_000 === 0) await session.checkTimeouts();
    if (served % FLUSH_EVERY === 0) await session.flush();
  }
  const cost = await measureWindow(session, t.net, meter, Number(end - session.latestNonce), tick);
  const w0 = performance.now();
  await session.checkTimeouts();
  const timeoutPassUs = Math.round((performance.now() - w0) * 1_000);
  const heap = await heapBytes();
  console.log(
    JSON.stringify({
      nonce: Number(session.latestNonce),
      live: session.state.inferences.size,
      ...cost,
      timeoutPassUs,
      rssMB: mb(process.memoryUsage().rss),
      heapMB: mb(heap),
      elapsedS: Math.round((performance.now() - started) / 1_000),
    }),
  );
}
// At the work limit one more inference must be refused before anything is signed (§7.5).
let refused: boolean | null = null;
if (session.latestNonce >= session.workLimit) {
  refused = false;
  try {
    await session.infer(request());
  } catch (error) {
    refused = isSessionError(error) && error.code === SessionErrorCode.NonceLimit;
  }
}
console.log(JSON.stringify({ maxNonce: Number(maxNonce), workLimit: Number(session.workLimit), refused }));
await session.close();
