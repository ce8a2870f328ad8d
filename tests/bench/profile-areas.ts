// Where a profiled proxy's CPU goes, by area (docs/performance.md, "Where a request's CPU goes"):
// reads a .cpuprofile written by `--cpu-prof` (BENCH_PROXY_NODE_OPTIONS="--cpu-prof
// --cpu-prof-dir=…"), and counts each sample for the first frame, from the leaf up, that is package
// or application code, classified by its file. Native work (JSON.parse, socket write syscalls, the
// secp256k1 binding) thus counts for the code that called it; samples with no such frame are GC,
// Node's own HTTP handling or the event loop.
// Run: `pnpm exec tsx tests/bench/profile-areas.ts <file.cpuprofile> [window s] [skip at end s]`; the
// window is taken back from the profile's end less the skip (the gateway run of `bench:load` is its
// last BENCH_SECONDS), and PROFILE_START=<s> drops the first seconds (the warm-up of `bench:floor`).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const AREAS: [RegExp, string][] = [
  [/secp256k1|curve-backend/, 'secp256k1 sign/recover'],
  [
    /crypto\/hash|sha256\.ts|@noble\/hashes|devshard\/src\/proto\/|chain\/src\/encoding|cosmjs-types|protobuf|rest-hash|prompt-hash|root-formula/,
    'hashing + proto encoding',
  ],
  [/node_modules\/\.pnpm\/postgres@|drizzle/, 'Postgres driver (+ its socket writes)'],
  [
    /ioredis|redis-parser|denque|standard-as-callback|cluster-key-slot|one-write\.ts/,
    'Redis client (+ its socket writes)',
  ],
  [/undici/, 'HTTP client to hosts (undici)'],
  [/pino|sonic-boom|lazy-request-log|shared\/src\/logger/, 'logging'],
  [/prom-client|proxy-metrics|shared\/src\/metrics/, 'metrics'],
  [
    /fastify|find-my-way|avvio|fast-json-stringify|ajv|fast-uri|toad-cache|secure-json-parse|fast-querystring|shared\/src\/http/,
    'HTTP server (Fastify + node:http)',
  ],
  [
    /devshard\/src\/json\/|completion\.ts|json-scan|json-bytes|response-hygiene|go-json-parse/,
    'JSON parse/serialize',
  ],
  [/devshard\/src\/session\//, 'devshard session (compose, intake)'],
  [
    /devshard\/src\/(state|signing)\/|escrow-runtime\/src\/(store|owned)\//,
    'devshard state/signing, session store',
  ],
  [/devshard\/src\/transport\//, 'devshard transport (SSE lines)'],
  [/apps\/proxy\//, 'proxy request code'],
  [/packages\/(escrow-runtime|chain|shared|devshard)\//, 'other gateway packages'],
];

const classify = (url: string) => AREAS.find(([re]) => re.test(url))?.[1] ?? `other: ${url.slice(-60)}`;

export function profileAreas(
  profile: Profile,
  windowS = Number.POSITIVE_INFINITY,
  skipEndS = 0,
  startS = 0,
): { busyUs: number; areas: Map<string, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const to = profile.endTime - skipEndS * 1e6;
  const from = Math.max(to - windowS * 1e6, profile.startTime + startS * 1e6);
  const areas = new Map<string, number>();
  let busyUs = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    const next = i + 1 < profile.samples.length ? t + profile.timeDeltas[i + 1]! : profile.endTime;
    if (t < from || t > to) continue;
    const leaf = byId.get(profile.samples[i]!)!.callFrame;
    if (leaf.functionName === '(idle)') continue;
    const dt = next - t;
    busyUs += dt;
    let area: string | undefined;
    let onHttp = false;
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const url = byId.get(id)!.callFrame.url;
      if (url.startsWith('file:')) {
        area = classify(url);
        break;
      }
      if (/_http_|node:net|stream_base|internal\/streams/.test(url)) onHttp = true;
    }
    area ??=
      leaf.functionName === '(garbage collector)'
        ? 'GC'
        : onHttp
          ? 'HTTP server (Fastify + node:http)'
          : 'event loop, timers, microtasks, (program)';
    areas.set(area, (areas.get(area) ?? 0) + dt);
  }
  return { busyUs, areas };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2]) {
  const [file, windowS, skipS] = process.argv.slice(2);
  const profile = JSON.parse(readFileSync(file!, 'utf8')) as Profile;
  const { busyUs, areas } = profileAreas(
    profile,
    windowS ? Number(windowS) : undefined,
    skipS ? Number(skipS) : 0,
    Number(process.env.PROFILE_START ?? 0),
  );
  process.stdout.write(`busy ${(busyUs / 1e6).toFixed(2)} s\n`);
  for (const [area, us] of [...areas].sort((a, b) => b[1] - a[1])) {
    process.stdout.write(
      `${((100 * us) / busyUs).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${area}\n`,
    );
  }
}
