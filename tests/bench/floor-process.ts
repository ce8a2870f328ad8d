// Starts a forwarder of floor-forwarder.ts as its own process and waits until it listens: the
// protocol floor (or a bare relay) that gateway-floor.ts and gateway-load.ts measure beside the proxy.
import { startTsProcess, type TsProcess } from '@gonka-gateway/deploy';
import { freePort } from '@gonka-gateway/shared/testing';
import { benchRuntime } from './bench-runtime.js';

export type FloorMode = 'fastify' | 'http' | 'protocol';

/** The forwarder in `mode`, relaying to `upstream` (the mock model's base URL), and its port. */
export async function startForwarder(
  mode: FloorMode,
  upstream: string,
  env: Record<string, string> = {},
): Promise<[TsProcess, number]> {
  const port = await freePort();
  const child = startTsProcess(
    'tests/bench/floor-forwarder.ts',
    {
      ...env,
      FLOOR_MODE: mode,
      FLOOR_PORT: String(port),
      FLOOR_UPSTREAM: upstream,
      // Profiled the same way as the proxy (BENCH_PROXY_NODE_OPTIONS), to compare the two by module.
      NODE_OPTIONS: process.env.BENCH_FLOOR_NODE_OPTIONS ?? '',
    },
    { runtime: benchRuntime() },
  );
  for (let waited = 0; !child.output().includes('listening'); waited += 50) {
    if (waited > 30_000) throw new Error(`the ${mode} forwarder did not start:\n${child.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return [child, port];
}
