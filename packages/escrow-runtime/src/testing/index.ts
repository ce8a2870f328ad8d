// Test support of the escrow runtime (behind the `./testing` export, never in the production face).
export { insertEscrowRows, setEscrowState, type TestEscrowRow } from './escrow-rows.js';
export { type PrivateRedis, startPrivateRedis } from './redis-server.js';
