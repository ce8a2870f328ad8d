// What the static checks of deploy/ share (no Docker engine or cluster runs here, so the files are
// held to the spec and to the code by reading them): paths, YAML parsing, the variables the gateway
// reads and the metric names it registers, both taken from the code itself.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMetricsRegistry, VARIABLES } from '@gonka-gateway/shared';
import { parse, parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../ts-process.js';

export const DEPLOY_DIR = join(REPO_ROOT, 'deploy');

export const readDeployFile = (path: string) => readFileSync(join(DEPLOY_DIR, path), 'utf8');

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML is checked field by field by the tests.
export type Yaml = any;

/** One YAML document; a syntax error fails the test naming the file. */
export function readYaml(path: string): Yaml {
  return parse(readDeployFile(path), { strict: true, uniqueKeys: true, merge: true });
}

/** Every document of a multi-document YAML file. */
export function readYamlDocuments(path: string): Yaml[] {
  return parseAllDocuments(readDeployFile(path)).map((d) => {
    if (d.errors.length > 0) throw new Error(`${path}: ${d.errors[0]!.message}`);
    return d.toJS();
  });
}

/** The variables the gateway processes read: the validated set (README "Configuration"). */
export const GATEWAY_VARIABLES = Object.keys(VARIABLES);

/** Source files of the programs the image runs (tests and test support excluded). */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist' && entry.name !== 'testing') {
        out.push(...sourceFiles(path));
      }
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      out.push(path);
    }
  }
  return out;
}

const RUNTIME_SOURCES = ['apps/proxy/src', 'apps/controller/src', 'packages'].flatMap((d) =>
  sourceFiles(join(REPO_ROOT, d)).filter((f) => !f.includes('/packages/devnet/')),
);

/**
 * Variables read directly from the environment outside the validated set (`env.NAME`), e.g. the
 * signing backend switch, so the deployment files document them too.
 */
export function directlyReadVariables(): string[] {
  const names = new Set<string>();
  for (const file of RUNTIME_SOURCES) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\benv(?:\?)?\.((?:GATEWAY|DEVSHARD)_[A-Z0-9_]+)/g)) {
      names.add(m[1]!);
    }
  }
  return [...names].filter((n) => !GATEWAY_VARIABLES.includes(n)).sort();
}

/**
 * Metric names the processes expose: prom-client's defaults and build info (from a real registry)
 * plus every `new Counter|Gauge|Histogram({ name: `${METRIC_PREFIX}…` })` in the proxy, controller
 * and packages, with the series names a histogram adds.
 */
export function registeredMetricNames(): Set<string> {
  const names = new Set<string>();
  const registry = createMetricsRegistry({ app: 'check', version: '0' });
  for (const m of registry.getMetricsAsArray()) names.add(m.name);
  for (const file of RUNTIME_SOURCES) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(
      /new (Counter|Gauge|Histogram|Summary)(?:<[^>]*>)?\(\{\s*name:\s*`\$\{METRIC_PREFIX\}([a-z0-9_]+)`/g,
    )) {
      const name = `devshard_gateway_${m[2]}`;
      names.add(name);
      if (m[1] === 'Histogram' || m[1] === 'Summary') {
        for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
      }
    }
  }
  // Default histograms (e.g. GC duration) expose the same series.
  for (const m of registry.getMetricsAsArray()) {
    if (String(m.type) === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(m.name + suffix);
    }
  }
  return names;
}

/** devshard_gateway_* names used in a PromQL expression. */
export function gatewayMetricsIn(expr: string): string[] {
  return [...expr.matchAll(/\bdevshard_gateway_[a-z0-9_]+/g)].map((m) => m[0]);
}
