// The demo's load balancer: HAProxy from the distribution in front of the proxy replicas, so the
// gateway answers on the spec's {gateway_url} (127.0.0.1:18080) the way a deployment does.
// SSE must not be buffered: HAProxy forwards response data as it arrives in http mode, compression
// is never enabled here, and the client/server timeouts are long enough for a streamed completion.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { ERROR_TABLE, type ErrorCode, type OpenAIErrorBody } from '@gonka-gateway/shared';
import { watchChild } from './ts-process.js';

/**
 * The answers HAProxy writes itself (no replica in rotation, a replica that timed out or answered
 * garbage), in the OpenAI error shape every gateway error has (architecture §6), so an OpenAI client
 * parses them and retries: the status, its code from the gateway's error table, and Retry-After.
 */
export const LOAD_BALANCER_ERRORS: ReadonlyArray<{
  status: 502 | 503 | 504;
  code: ErrorCode;
  message: string;
}> = [
  {
    status: 502,
    code: 'upstream_error',
    message: 'the gateway load balancer got no valid answer from a gateway replica; retry',
  },
  {
    status: 503,
    code: 'service_unavailable',
    message: 'no gateway replica is ready to serve right now (load balancer); retry shortly',
  },
  {
    status: 504,
    code: 'upstream_timeout',
    message: 'a gateway replica did not answer in time (load balancer timeout); retry',
  },
];

/** Seconds a client is asked to wait before retrying a load balancer error. */
export const LOAD_BALANCER_RETRY_AFTER_S = 2;

/** The body of a load balancer error, exactly as HAProxy sends it. */
export function loadBalancerErrorBody(e: (typeof LOAD_BALANCER_ERRORS)[number]): string {
  const body: OpenAIErrorBody = {
    error: { message: e.message, type: ERROR_TABLE[e.code].type, param: null, code: e.code },
  };
  return JSON.stringify(body);
}

/** `http-error` lines (HAProxy ≥ 2.2): a single-quoted string is taken verbatim by its parser. */
function httpErrorLines(): string[] {
  return LOAD_BALANCER_ERRORS.map((e) => {
    const body = loadBalancerErrorBody(e);
    if (body.includes("'")) throw new Error('a load balancer error body must not contain a single quote');
    return `  http-error status ${e.status} content-type application/json string '${body}' hdr Retry-After ${LOAD_BALANCER_RETRY_AFTER_S} hdr Cache-Control no-store`;
  });
}

/** The haproxy binary on PATH, or undefined. */
export function findHaproxy(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v haproxy'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Installs haproxy from the distribution's packages when it is missing and this process may: as
 * root, with apt-get present, outside CI (a CI job must not change its machine behind the tests'
 * back). Returns the binary, or undefined with no side effect besides apt's own output.
 */
export function ensureHaproxy(say: (line: string) => void): string | undefined {
  const found = findHaproxy();
  if (found) return found;
  if (process.getuid?.() !== 0 || process.env.CI) return undefined;
  try {
    execFileSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  say('installing haproxy from the distribution (apt-get install -y haproxy)…');
  try {
    execFileSync('apt-get', ['install', '-y', '-q', 'haproxy'], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 180_000,
    });
  } catch {
    return undefined;
  }
  return findHaproxy();
}

export interface Backend {
  name: string;
  /** host:port of the replica. */
  address: string;
}

export interface HaproxyLayout {
  /** What the frontend binds: `127.0.0.1:18080` for ./start, `:8080` inside a container. */
  bind: string;
  servers: Backend[];
  /** The file's first line (who generates it). */
  header: string;
  /**
   * Containers: resolve server names through Docker's DNS at run time and start even while a
   * replica is not up yet (compose), and log requests to stdout.
   */
  dockerDns?: boolean;
  /**
   * Serve the API only: /metrics, /healthz and /readyz are refused at the load balancer, because
   * Prometheus scrapes each process on its own port (deploy/prometheus/prometheus.yml).
   */
  apiOnly?: boolean;
  /** A second frontend on this port serving HAProxy's own Prometheus metrics at /metrics. */
  metricsPort?: number;
}

/**
 * The HAProxy configuration of ./start (generated at each start) and of deploy/compose.yaml (the
 * committed deploy/haproxy/haproxy.cfg, checked against this function by a test): one source for
 * the rules that matter, SSE unbuffered, /readyz health checks, a refused connection retried.
 */
export function haproxyConfig(layout: HaproxyLayout): string {
  const init = layout.dockerDns ? ' resolvers docker init-addr last,libc,none' : '';
  // A replica is in rotation only while /readyz answers 200 (apps/proxy routes/health.ts: the pool
  // and the settings read). One 200 brings it back (rise 1): readiness is the whole test. A replica
  // that dies is taken out by the first connection it refuses to real traffic (observe layer4,
  // error-limit 1, on-error mark-down; the request is retried on another replica), so a restarted
  // one is never sent traffic before its /readyz says 200; without traffic two failed checks take
  // it out, the second one 250 ms after the first (fastinter).
  const servers = layout.servers.map(
    (b) =>
      `  server ${b.name} ${b.address} check inter 1s fastinter 250ms fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down${init}`,
  );
  return [
    `# ${layout.header}`,
    'global',
    '  maxconn 4096',
    ...(layout.dockerDns ? ['  log stdout format raw local0 info'] : []),
    ...(layout.dockerDns
      ? [
          'resolvers docker',
          '  nameserver dns 127.0.0.11:53',
          '  hold valid 5s',
          '  accepted_payload_size 8192',
        ]
      : []),
    'defaults',
    '  mode http',
    ...(layout.dockerDns ? ['  log global', '  option httplog'] : []),
    // One request per server connection: a stream ends with its response, nothing is held back.
    // No `compression` anywhere: compressing would buffer the SSE stream.
    '  option http-server-close',
    '  timeout connect 2s',
    // A streamed completion may pause between tokens; the admin escrow creation waits for a block.
    '  timeout client 10m',
    '  timeout server 10m',
    '  timeout tunnel 1h',
    '  timeout http-request 30s',
    // A refused connection (a replica that died) is retried on the other replica.
    '  retries 2',
    '  option redispatch',
    '  retry-on conn-failure empty-response',
    // HAProxy's own 502/503/504 as OpenAI JSON errors with Retry-After (LOAD_BALANCER_ERRORS).
    ...httpErrorLines(),
    'frontend gateway',
    `  bind ${layout.bind}`,
    ...(layout.apiOnly ? ['  http-request deny deny_status 404 if { path /metrics /healthz /readyz }'] : []),
    '  default_backend proxies',
    ...(layout.metricsPort
      ? [
          'frontend metrics',
          `  bind :${layout.metricsPort}`,
          '  http-request use-service prometheus-exporter if { path /metrics }',
          '  http-request deny deny_status 404',
        ]
      : []),
    'backend proxies',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    ...servers,
    '',
  ].join('\n');
}

export interface LoadBalancer {
  child: ChildProcess;
  exited: Promise<number | string>;
  output(): string;
  stop(): Promise<number | string>;
}

/** Writes the config and runs haproxy in the foreground as a child of this process. */
export function startHaproxy(bin: string, configPath: string, config: string): LoadBalancer {
  writeFileSync(configPath, config);
  // -db: stay in the foreground, no daemon; -W: master-worker, which stops cleanly on SIGTERM.
  const child = spawn(bin, ['-W', '-db', '-f', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  const { output, exited } = watchChild(child);
  return {
    child,
    exited,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
