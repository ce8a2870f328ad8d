import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';

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

/** What a process read from its stored copy because the public node or chain REST did not answer. */
export type StoredCopyRead = 'participants' | 'inference_params' | 'chain_phase';

/**
 * `devshard_gateway_node_stored_copy_total{what}`: reads the public node or the chain REST could not
 * answer, served from the last known copy instead (docs/operator-guide.md "When the public node is
 * down"; log marker `node_unreachable_stored_copy`). One per process registry.
 */
export function storedCopyCounter(registry: Registry): Counter<'what'> {
  return new Counter({
    name: `${METRIC_PREFIX}node_stored_copy_total`,
    help: 'Reads the public node or chain REST could not answer, served from the copy stored in Postgres or memory (what = participants, inference_params, chain_phase).',
    labelNames: ['what'] as const,
    registers: [registry],
  });
}
