// Test support of @gonka-gateway/devshard (import from '@gonka-gateway/devshard/testing'), never used
// by production code: the SessionStore contract every store implementation runs unchanged
// (architecture §2.3), devshard hosts in process (behind HostTransport or real HTTP, §4.2) and a
// session over them. The transaction fixtures and the compose-and-apply driver (session-fixture.ts,
// drive.ts) stay package-internal: they import vitest.
export { serveHosts } from './http-host-server.js';
export {
  type ChatCall,
  type HostBehaviour,
  InProcessHost,
  InProcessNetwork,
  TestClock,
} from './in-process-hosts.js';
export { advanceTo, ESCROW_ID, keyN, request, type SetupOptions, START, setup } from './session-setup.js';
export {
  type ContractTestApi,
  type SessionStoreContractOptions,
  sessionStoreContract,
} from './store-contract.js';
export { wrapStore } from './wrap-store.js';
