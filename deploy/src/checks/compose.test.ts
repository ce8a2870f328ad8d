// deploy/compose.yaml against the spec's deployment facts (§2.10) and the code: services, health
// checks, restart policy, the host-local API port, secrets from a git-ignored env file that lists
// every variable the gateway reads, the storage mount, and a load balancer config that is the one
// ./start uses (compose-haproxy.ts).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { VARIABLES, type VariableSpec } from '@gonka-gateway/shared';
import { describe, expect, it } from 'vitest';
import { COMPOSE_HAPROXY_PATH, composeHaproxyConfig } from '../compose-haproxy.js';
import { findHaproxy } from '../load-balancer.js';
import { REPO_ROOT } from '../ts-process.js';
import {
  DEPLOY_DIR,
  directlyReadVariables,
  GATEWAY_VARIABLES,
  readDeployFile,
  readYaml,
  type Yaml,
} from './deploy-files.js';

const compose = readYaml('compose.yaml');
const services = compose.services as Record<string, Yaml>;
const GATEWAY = ['controller', 'proxy1', 'proxy2'];
const SPEC_TIMINGS = { interval: '30s', timeout: '5s', retries: 3, start_period: '10s' };

describe('deploy/compose.yaml', () => {
  it('has Postgres, Redis, the controller, two proxies, the load balancer, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['controller', 'grafana', 'haproxy', 'postgres', 'prometheus', 'proxy1', 'proxy2', 'redis'].sort(),
    );
    expect(services.postgres!.volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(services.redis!.command.join(' ')).toContain('--appendonly yes');
    for (const name of GATEWAY) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: compose's own interpolation syntax.
      expect(services[name]!.image).toBe('${GATEWAY_IMAGE:-gonka-gateway:latest}');
    }
    expect(services.controller!.command).toEqual(['controller']);
    expect(services.proxy1!.command).toEqual(['proxy']);
  });

  it("health checks are the spec's: GET /v1/status on the container port every 30 s, timeout 5 s, 3 retries, start 10 s", () => {
    for (const name of ['proxy1', 'proxy2']) {
      const check = services[name]!.healthcheck;
      expect(check).toMatchObject(SPEC_TIMINGS);
      expect(check.test.join(' ')).toContain(
        `http://127.0.0.1:${services[name]!.environment.DEVSHARD_PORT}/v1/status`,
      );
    }
    // The controller serves no /v1/status; its own health route, same timings.
    const controller = services.controller!.healthcheck;
    expect(controller).toMatchObject(SPEC_TIMINGS);
    expect(controller.test.join(' ')).toContain(
      `http://127.0.0.1:${services.controller!.environment.GATEWAY_CONTROLLER_PORT}/internal/health`,
    );
  });

  it('every service restarts unless stopped; only 127.0.0.1 ports are published, the API on 18080 → 8080', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.restart, name).toBe('unless-stopped');
      for (const port of s.ports ?? []) expect(String(port), name).toMatch(/^127\.0\.0\.1:/);
    }
    expect(services.haproxy!.ports).toEqual(['127.0.0.1:18080:8080']);
    expect(services.proxy1!.environment.DEVSHARD_PORT).toBe(VARIABLES.DEVSHARD_PORT.default);
    expect(services.proxy1!.environment.GATEWAY_LISTEN_HOST).toBe('0.0.0.0');
  });

  it('mounts the storage directory of the spec into the controller', () => {
    const storage = (VARIABLES.DEVSHARD_STORAGE_DIR as VariableSpec<string>).default;
    const host = (VARIABLES.DEVSHARD_STORAGE_HOST_DIR as VariableSpec<string>).default;
    expect(services.controller!.volumes).toContain(`\${DEVSHARD_STORAGE_HOST_DIR:-${host}}:${storage}`);
    expect(storage).toBe('/root/.devshardctl');
  });

  it('secrets come from deploy/.env, which git ignores; the committed example lists every variable the gateway reads', () => {
    for (const name of GATEWAY) expect(services[name]!.env_file).toEqual(['.env']);
    execFileSync('git', ['check-ignore', '-q', 'deploy/.env'], { cwd: REPO_ROOT });
    const example = readDeployFile('.env.example');
    const listed = new Set([...example.matchAll(/^#?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
    const missing = [...GATEWAY_VARIABLES, ...directlyReadVariables()].filter((n) => !listed.has(n));
    expect(missing, 'variables the code reads but deploy/.env.example does not list').toEqual([]);
    // Required ones (and the escrow mode) are set: in the example or by compose itself.
    const set = new Set([...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
    const required = Object.entries(VARIABLES)
      .filter(([, s]) => (s as VariableSpec<unknown>).required)
      .map(([n]) => n);
    for (const name of [...required, 'DEVSHARDS_JSON']) {
      expect(set.has(name) || name in services.controller!.environment, name).toBe(true);
    }
    // Compose's own interpolations are documented in the example too.
    const interpolated = [...readDeployFile('compose.yaml').matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]!);
    for (const name of interpolated) expect(listed.has(name), name).toBe(true);
  });

  it('the load balancer config is the one ./start generates, valid for haproxy, with SSE unbuffered', () => {
    expect(
      readDeployFile('haproxy/haproxy.cfg'),
      'regenerate: pnpm tsx --conditions=source deploy/src/compose-haproxy.ts',
    ).toBe(composeHaproxyConfig());
    const cfg = composeHaproxyConfig();
    expect(cfg).not.toMatch(/compression/);
    expect(cfg).toContain('option httpchk GET /readyz');
    for (const name of ['proxy1', 'proxy2']) expect(cfg).toContain(`server ${name} ${name}:8080`);
    expect(services.haproxy!.volumes).toContain(
      './haproxy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro',
    );
    const haproxy = findHaproxy();
    if (haproxy) execFileSync(haproxy, ['-c', '-q', '-f', COMPOSE_HAPROXY_PATH], { stdio: 'pipe' });
  });

  it('Prometheus scrapes every gateway process and the load balancer; Grafana is provisioned', () => {
    const prometheus = readYaml('prometheus/prometheus.yml');
    const targets = prometheus.scrape_configs.flatMap((c: Yaml) =>
      c.static_configs.flatMap((s: Yaml) => s.targets),
    );
    expect(targets.sort()).toEqual(['controller:8081', 'haproxy:8405', 'proxy1:8080', 'proxy2:8080'].sort());
    expect(prometheus.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    for (const mount of services.grafana!.volumes as string[]) {
      const [source] = mount.split(':');
      if (source!.startsWith('./')) expect(existsSync(join(DEPLOY_DIR, source!)), mount).toBe(true);
    }
    const datasource = readYaml('grafana/provisioning/datasources/prometheus.yaml');
    expect(datasource.datasources[0]).toMatchObject({
      type: 'prometheus',
      uid: 'prometheus',
      url: 'http://prometheus:9090',
    });
  });
});
