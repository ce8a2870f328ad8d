import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

export type { Registry };

export const METRIC_PREFIX = 'devshard_gateway_';

/**
 * A registry per process (never prom-client's global one, so tests can build several apps): default
 * process metrics plus `devshard_gateway_build_info{app,version,node}` = 1.
 */
export function createMetricsRegistry(options: { app: string; version: string }): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const buildInfo = new Gauge({
    name: `${METRIC_PREFIX}build_info`,
    help: 'Build information of this gateway process; always 1.',
    labelNames: ['app', 'version', 'node'] as const,
    registers: [registry],
  });
  buildInfo.set({ app: options.app, version: options.version, node: process.version }, 1);
  return registry;
}
