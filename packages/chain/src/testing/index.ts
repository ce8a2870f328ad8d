// Test support of @gonka-gateway/chain (import from '@gonka-gateway/chain/testing'), never used by
// production code: a real HTTP server on an ephemeral port standing in for a node or chain REST API.
export {
  type RecordedRequest,
  sendJson,
  startTestHttpServer,
  type TestHandler,
  type TestHttpServer,
} from './test-http-server.js';
