import type { Redis } from 'ioredis';
import type { GatewayConfig } from '../config/load-config.js';
import { type Database, openDatabase } from '../db/client.js';
import type { Logger } from '../logger.js';
import { closeRedis, openRedis } from '../redis/client.js';

export interface Infrastructure {
  database: Database;
  redis: Redis;
  close(): Promise<void>;
}

/** host:port of a service URL, for messages: never the credentials. */
export function describeEndpoint(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the configured address';
  }
}

export class InfrastructureError extends Error {
  override name = 'InfrastructureError';
}

/** Opens Postgres and Redis and checks that both answer; a failure names the service, not secrets. */
export async function openInfrastructure(
  config: GatewayConfig,
  name: string,
  logger?: Logger,
): Promise<Infrastructure> {
  const database = openDatabase(config.databaseUrl, { applicationName: name });
  // ioredis retries on its own; log each failure (message only: the URL may hold a password).
  const onError = (err: Error) => logger?.warn({ error: err.message }, 'redis connection error');
  const redis = openRedis(config.redis.url, { name, lazyConnect: true, onError });
  const close = async () => {
    await Promise.allSettled([database.close(), closeRedis(redis)]);
  };
  try {
    await database.sql`select 1`;
  } catch (err) {
    await close();
    const code = (err as { code?: string }).code ?? 'no answer';
    const where = `Postgres at ${describeEndpoint(config.databaseUrl)}`;
    if (code === '3D000') {
      throw new InfrastructureError(
        `${where}: the database does not exist yet; start the controller, which creates it`,
      );
    }
    throw new InfrastructureError(`${where} is not usable (${code})`);
  }
  try {
    await withTimeout(
      redis.connect().then(() => redis.ping()),
      5000,
    );
  } catch {
    await close();
    throw new InfrastructureError(`Redis at ${describeEndpoint(config.redis.url)} did not answer`);
  }
  return { database, redis, close };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Live dependency checks for status routes: each true when the service answered just now. */
export async function checkInfrastructure(infra: Pick<Infrastructure, 'database' | 'redis'>) {
  const [postgres, redis] = await Promise.all([
    infra.database.sql`select 1`.then(
      () => true,
      () => false,
    ),
    infra.redis.status === 'ready'
      ? infra.redis.ping().then(
          () => true,
          () => false,
        )
      : Promise.resolve(false),
  ]);
  return { postgres, redis };
}
