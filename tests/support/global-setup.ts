// Runs once per `pnpm test`: finds Postgres and Redis (or starts containers where Docker exists)
// and hands their URLs to every test worker through the environment.
// Relative import: vitest loads global setup outside the workspace's `source` export condition.
import { resolveTestServices, type TestServices } from '../../packages/shared/src/testing/index.js';

let services: TestServices | undefined;

export async function setup(): Promise<void> {
  services = await resolveTestServices();
  process.env.TEST_DATABASE_URL = services.databaseUrl;
  process.env.TEST_REDIS_URL = services.redisUrl;
}

export async function teardown(): Promise<void> {
  await services?.stop();
}
