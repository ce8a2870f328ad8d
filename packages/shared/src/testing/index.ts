// Test-only helpers (import from '@gonka-gateway/shared/testing'): isolation per test file.
export { freePort } from './free-port.js';
export { createTestDatabase, dropTestDatabase, type TestDatabase } from './test-database.js';
export { createTestRedis, deleteKeysWithPrefix, type TestRedis } from './test-redis.js';
export {
  DEFAULT_TEST_DATABASE_URL,
  DEFAULT_TEST_REDIS_URL,
  resolveTestServices,
  type TestServices,
} from './test-services.js';
