import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveTestServices } from './test-services.js';

const dockerPresent = Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');

describe('resolveTestServices', () => {
  it('uses the configured services when they answer', async () => {
    const services = await resolveTestServices(process.env);
    expect(services.databaseUrl).toMatch(/^postgres/);
    expect(services.redisUrl).toMatch(/^redis/);
  });

  it.skipIf(dockerPresent)(
    'fails with instructions when services are down and there is no Docker',
    async () => {
      const error = await resolveTestServices({
        TEST_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/postgres',
        TEST_REDIS_URL: 'redis://127.0.0.1:2',
      }).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toContain('Postgres at 127.0.0.1:1 and Redis at 127.0.0.1:2');
      expect((error as Error).message).toContain('pg_ctlcluster');
      expect((error as Error).message).toContain('TEST_DATABASE_URL');
    },
  );
});
