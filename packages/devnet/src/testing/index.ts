// Test support of @gonka-gateway/devnet (import from '@gonka-gateway/devnet/testing'), never used by
// production code: a devnet per test with txs built and broadcast against it (test-devnet.ts), and a
// hand-driven devshard user for the host tests (test-user.ts, devshard-protocol.md §7.1–§7.3).
export {
  account,
  attribute,
  broadcast,
  buildSettlement,
  CREATE_FEE,
  CREATE_GAS,
  type CustomTx,
  createEscrow,
  deliver,
  getTx,
  type JsonBody,
  NINE_MINUTES_NS,
  type SettlementInput,
  signCustom,
  snapshot,
  startTestDevnet,
  TxFactory,
  type TxOptions,
  type TxResponse,
  withSignature,
} from './test-devnet.js';
export {
  type ChatAnswer,
  chatBody,
  metaOf,
  parseSse,
  receiptOf,
  signTestDiff,
  TestUser,
} from './test-user.js';
