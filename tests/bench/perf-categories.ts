// Where a proxy's CPU goes by kind of work, from Linux perf (docs/performance.md, "Where a request's
// CPU goes"): every thread of the process, kernel and native libraries included, which V8's own
// sampling profiler (`--cpu-prof`) cannot see or misplaces (it charges a socket write syscall far
// more than the kernel spends on it). Record the proxy of a running bench with JIT symbols on:
//   BENCH_PROXY_NODE_OPTIONS=--perf-basic-prof pnpm bench:load   (or bench:gateway-io, …)
//   perf record -F 999 -g -p <proxy pid> -o proxy.perf -- sleep 12   (during the measured run)
// then: `pnpm exec tsx tests/bench/perf-categories.ts proxy.perf`. Each sample counts for the first
// category (in the order below) that its leaf symbol matches.
import { spawnSync } from 'node:child_process';

const CATEGORIES: [string, RegExp][] = [
  ['secp256k1 binding (sign, recover)', /secp256k1\.\w+\.node/],
  ['kernel (syscalls, network stack, scheduling)', /\[kernel/],
  ['OpenSSL (SHA-256)', /sha256|SHA256|libcrypto|EVP_/],
  [
    'garbage collection',
    /Scaveng|Heap::|GC|Marking|Sweep|Evacuat|Compact|MemoryChunk|Remembered|SlotSet|ArrayBufferSweeper|MinorMark/,
  ],
  ['V8 compilers (Maglev, TurboFan)', /Compile|maglev::|Maglev|compiler::|turboshaft|Turbofan/],
  ['optimized JS (Maglev, TurboFan code)', /JS:[*+]/],
  ['interpreted and baseline JS', /JS:[~^]|Interpreter|Baseline/],
  ['JSON parse and stringify', /Json|JSON/],
  [
    'property access: inline caches, object shapes',
    /IC|Transition|Migrate|LookupIterator|Map::|Descriptor|PropertyKey/,
  ],
  [
    'calls, promises, async functions, microtasks',
    /Builtins_(Call|Construct|Async|Resume|Promise|Fulfill|Resolve|RunMicro|Reject|PerformPromise|NewPromise)|Microtask/,
  ],
  ['strings', /String|Utf8|utf8|Latin1|latin1/],
  ['typed arrays and Buffers', /TypedArray|ArrayBuffer|BackingStore|node::Buffer|Uint8Array/],
  ['libc (malloc, free, memcpy)', /libc\.so/],
  ['other V8 builtins and runtime', /Builtins_|v8::|node\s+\[\.\]/],
  ['other', /./],
];

function report(file: string, sort: string): string[] {
  const out = spawnSync(
    'perf',
    ['report', '-i', file, '--no-children', '--sort', sort, '-g', 'none', '--stdio'],
    {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  if (out.status !== 0) throw new Error(`perf report failed: ${out.stderr}`);
  return out.stdout.split('\n').filter((l) => /^\s+\d+\.\d+%/.test(l));
}

const file = process.argv[2];
if (!file) throw new Error('usage: perf-categories.ts <perf.data>');
for (const line of report(file, 'comm')) console.log(`thread ${line.trim()}`);
const shares = new Map<string, number>(CATEGORIES.map(([name]) => [name, 0]));
let total = 0;
for (const line of report(file, 'dso,sym')) {
  const share = Number.parseFloat(line);
  total += share;
  const [name] = CATEGORIES.find(([, re]) => re.test(line))!;
  shares.set(name, shares.get(name)! + share);
}
console.log(`\n| Kind of work | share of the process's CPU |\n|---|---|`);
for (const [name, share] of shares) {
  if (share > 0) console.log(`| ${name} | ${((100 * share) / total).toFixed(1)} % |`);
}
