// Runs once per `pnpm test`: finds Postgres and Redis (or starts containers where Docker exists)
// and hands their URLs to every test worker through the environment.
import { resolveTestServices, type TestServices } from '@gonka-gateway/shared/testing';

let services: TestServices | undefined;

export async function setup(): Promise<void> {
  services = await resolveTestServices();
  process.env.TEST_DATABASE_URL = services.databaseUrl;
  process.env.TEST_REDIS_URL = services.redisUrl;
}

export async function teardown(): Promise<void> {
  await services?.stop();
}
