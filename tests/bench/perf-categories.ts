// Where a proxy's CPU goes, from Linux perf (docs/performance.md, "Where a request's CPU goes"): every
// thread of the process, kernel and native libraries included, which V8's own sampling profiler
// (`--cpu-prof`) cannot see or misplaces (it charges a socket write syscall far more than the kernel
// spends on it). Two tables: by kind of work (each sample's leaf symbol) and by module (the innermost
// frame that is gateway or dependency code, so native work counts for the code that called it); with
// PERF_TOP=<n> a third, the n gateway functions that cost most with everything they call.
// Record the proxy of a running bench with V8's jitdump on, so that JIT code keeps exact names after
// V8 moves it (`--perf-basic-prof` names go stale and misplace samples by module):
//   BENCH_PROXY_NODE_OPTIONS="--perf-prof --interpreted-frames-native-stack" pnpm bench:load   (…)
//   perf record -k mono -F 999 -g -p <proxy pid> -o proxy.perf -- sleep 12   (in the measured run)
//   perf inject --jit -i proxy.perf -o proxy.jit.perf   (in the proxy's working directory, the repo)
// then `pnpm exec tsx tests/bench/perf-categories.ts proxy.jit.perf`. The proxy leaves jit-<pid>.dump
// and jitted-<pid>-*.so in the repository root: delete them after.
import { spawnSync } from 'node:child_process';

/** Kinds of work, by leaf symbol: a sample counts for the first that matches. */
const KINDS: [string, RegExp][] = [
  ['secp256k1 binding (sign, recover)', /secp256k1\.\w+\.node/],
  ['kernel (syscalls, network stack, scheduling)', /\[kernel/],
  ['OpenSSL (SHA-256)', /sha256_|SHA256|libcrypto|EVP_/],
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
    /Builtin.?(Call|Construct|Async|Resume|Promise|Fulfill|Resolve|RunMicro|Reject|PerformPromise|NewPromise)|Microtask/,
  ],
  ['strings', /String|Utf8|utf8|Latin1|latin1/],
  ['typed arrays and Buffers', /TypedArray|ArrayBuffer|BackingStore|node::Buffer|Uint8Array/],
  ['libc (malloc, free, memcpy)', /libc\.so|\b(malloc|free|memmove|memcpy|_int_\w+)\b/],
  ['other V8 builtins and runtime', /Builtin|v8::|\bnode\b/],
  ['other', /./],
];

/** Modules, by the innermost JS frame of gateway or dependency code. */
const MODULES: [string, RegExp][] = [
  ['devshard protocol: session, state, transport, encodings', /packages\/devshard\/(src|dist)\//],
  [
    'curve and hashing: secp256k1 binding, chain crypto and encoding',
    /secp256k1@|packages\/chain\/(src|dist)\//,
  ],
  ['proxy: request path (chat, serve, usage, gate, plugins)', /apps\/proxy\/(src|dist)\//],
  ['owned escrows and session store (escrow-runtime)', /packages\/escrow-runtime\/(src|dist)\//],
  ['Postgres client (postgres.js)', /\/postgres@/],
  ['Redis client (ioredis)', /\/ioredis@|redis-parser|denque/],
  ['HTTP client to hosts (undici)', /\/undici@/],
  ['HTTP server (Fastify, node:http)', /fastify|find-my-way|avvio|node:_http|node:internal\/http/],
  ['other gateway and dependency code', /\/work\/main\/(apps|packages)\/|node_modules\//],
  // Last: only samples with no gateway or dependency frame on the stack.
  ['Node internals alone (streams, timers, task queues)', /node:/],
];

function perf(args: string[]): string {
  const out = spawnSync('perf', args, { encoding: 'utf8', maxBuffer: 1024 * 1024 * 1024 });
  if (out.status !== 0) throw new Error(`perf ${args[0]} failed: ${out.stderr}`);
  return out.stdout;
}

function printTable(title: string, shares: Map<string, number>, total: number): void {
  console.log(`\n| ${title} | share of the process's CPU |\n|---|---|`);
  for (const [name, n] of shares) if (n > 0) console.log(`| ${name} | ${((100 * n) / total).toFixed(1)} % |`);
}

const file = process.argv[2];
if (!file) throw new Error('usage: perf-categories.ts <perf.data>');
const reportArgs = ['report', '-i', file, '--no-children', '-g', 'none', '--stdio', '--sort'];
for (const line of perf([...reportArgs, 'comm']).split('\n')) {
  if (/^\s+\d+\.\d+%/.test(line)) console.log(`thread ${line.trim()}`);
}

const kinds = new Map<string, number>(KINDS.map(([name]) => [name, 0]));
const modules = new Map<string, number>([...MODULES.map(([name]) => [name, 0] as [string, number])]);
const NO_JS = 'no JS frame: event loop, V8 helper threads (GC, compilers), other native';
modules.set(NO_JS, 0);
// Gateway functions by inclusive share: a sample counts once for every gateway function on its stack,
// so a function's figure is everything it and its callees cost. An async function's share covers
// only the synchronous stretches between its awaits: what runs after an await has the event loop
// below it, not the function.
const inclusive = new Map<string, number>();
const top = Number(process.env.PERF_TOP ?? 0);
let total = 0;
// `perf script`: one block per sample, its frames leaf first, "<ip> <symbol> (<dso>)".
for (const block of perf(['script', '-i', file, '-F', 'ip,sym,dso']).split(/\n\s*\n/)) {
  const frames = block
    .split('\n')
    .filter((l) => /^\s/.test(l))
    .map((l) => l.trim());
  if (frames.length === 0) continue;
  total++;
  const [kind] = KINDS.find(([, re]) => re.test(frames[0]!))!;
  kinds.set(kind, kinds.get(kind)! + 1);
  // Gateway or dependency code anywhere on the stack wins over the Node internals it called.
  const jsFrames = frames.filter((f) => f.includes('JS:'));
  const owner = (candidates: [string, RegExp][]) =>
    jsFrames.map((f) => candidates.find(([, re]) => re.test(f))).find((m) => m !== undefined)?.[0];
  const module = owner(MODULES.slice(0, -1)) ?? owner(MODULES.slice(-1)) ?? NO_JS;
  modules.set(module, modules.get(module)! + 1);
  if (top > 0) {
    const gatewayFrames = jsFrames
      .filter((f) => !f.includes('node_modules'))
      .map((f) => /JS:[*+~^]?'?(\S*) \S*?\/(apps|packages)\/([^:]+):(\d+)/.exec(f))
      .filter((m) => m !== null)
      .map((m) => `${m[1] || '(anonymous)'} ${m[2]}/${m[3]}:${m[4]}`);
    for (const name of new Set(gatewayFrames)) inclusive.set(name, (inclusive.get(name) ?? 0) + 1);
  }
}
printTable('Kind of work (leaf symbol)', kinds, total);
printTable('Module (innermost gateway or dependency frame)', modules, total);
if (top > 0) {
  const first = [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top);
  printTable('Gateway function, inclusive (it and its callees)', new Map(first), total);
}
