// How the benchmarks run the proxy and the protocol floor (docs/performance.md): by default as the
// image runs the proxy (deploy/Dockerfile: the compiled JavaScript, NODE_ENV=production), which is
// what an operator's replicas cost; BENCH_RUNTIME=source runs them from TypeScript through tsx, as
// ./start does. The proxy and the floor beside it always run the same way.
import { buildCompiled } from '@gonka-gateway/deploy';

export type BenchRuntime = 'source' | 'compiled';

let built = false;

/** The runtime asked for; the first call in a bench compiles the packages when it is 'compiled'. */
export function benchRuntime(env = process.env): BenchRuntime {
  const runtime = env.BENCH_RUNTIME ?? 'compiled';
  if (runtime !== 'source' && runtime !== 'compiled') {
    throw new Error(`BENCH_RUNTIME must be source or compiled, not ${runtime}`);
  }
  if (runtime === 'compiled' && !built) {
    buildCompiled();
    built = true;
  }
  return runtime;
}
