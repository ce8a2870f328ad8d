// Where tests find Postgres and Redis: TEST_DATABASE_URL / TEST_REDIS_URL (defaulting to the local
// services), else containers when a Docker engine exists, else a failure that says what to start.
import { existsSync } from 'node:fs';
import net from 'node:net';

export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const DEFAULT_TEST_REDIS_URL = 'redis://127.0.0.1:6379';

export interface TestServices {
  databaseUrl: string;
  redisUrl: string;
  /** Stops containers started for the run (no-op for external services). */
  stop(): Promise<void>;
}

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function dockerAvailable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

export async function resolveTestServices(env = process.env): Promise<TestServices> {
  const databaseUrl = env.TEST_DATABASE_URL || DEFAULT_TEST_DATABASE_URL;
  const redisUrl = env.TEST_REDIS_URL || DEFAULT_TEST_REDIS_URL;
  const [pgUp, redisUp] = await Promise.all([reachable(databaseUrl, 5432), reachable(redisUrl, 6379)]);
  if (pgUp && redisUp) return { databaseUrl, redisUrl, stop: async () => {} };

  if (!dockerAvailable()) {
    const missing = [
      !pgUp && `Postgres at ${new URL(databaseUrl).host}`,
      !redisUp && `Redis at ${new URL(redisUrl).host}`,
    ]
      .filter(Boolean)
      .join(' and ');
    throw new Error(
      `Tests need ${missing}, which did not answer, and no Docker engine is available for testcontainers. ` +
        'Start them (e.g. `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` and ' +
        '`redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no`), ' +
        'or point TEST_DATABASE_URL / TEST_REDIS_URL at running servers.',
    );
  }
  // Only reached where Docker exists; loaded lazily so machines without it never import it.
  const stops: Array<() => Promise<unknown>> = [];
  let pg = databaseUrl;
  let redis = redisUrl;
  if (!pgUp) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const c = await new PostgreSqlContainer('postgres:15-alpine').withUsername('postgres').start();
    pg = c.getConnectionUri().replace(/\/[^/]*$/, '/postgres');
    stops.push(() => c.stop());
  }
  if (!redisUp) {
    const { RedisContainer } = await import('@testcontainers/redis');
    const c = await new RedisContainer('redis:7-alpine').start();
    redis = c.getConnectionUrl();
    stops.push(() => c.stop());
  }
  return {
    databaseUrl: pg,
    redisUrl: redis,
    stop: async () => {
      await Promise.all(stops.map((s) => s()));
    },
  };
}
