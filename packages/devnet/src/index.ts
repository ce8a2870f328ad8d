// Public surface of @gonka-gateway/devnet: startDevnet and the types of what it returns, the mock
// model, fault settings (chain, node and devshard hosts), the devshard hosts' control types, and the
// dev accounts' well-known values.
export type { DevnetChain } from './chain/accessor.js';
export type { ModuleName } from './chain/bank.js';
export type { TxEvent, TxResult } from './chain/events.js';
// The params shapes (EpochParams, FeeGroup, DevshardEscrowParams, …) are @gonka-gateway/chain's.
export type { DevnetEscrowParams, DevnetParams } from './chain/params.js';
export type { IndexedTx, ParticipantRecord } from './chain/state.js';
export type { AccountRecord, EscrowRow } from './chain/stores.js';
export { devnetChainClient } from './chain-client.js';
export type { ConfirmationPocEvent, DevnetCore, HostIdentity } from './core.js';
export {
  type Devnet,
  type DevnetBlocks,
  type DevnetEpochs,
  type DevnetParticipant,
  startDevnet,
} from './devnet.js';
export { devnetOptionsFromEnv } from './env-options.js';
export {
  type BroadcastFault,
  type BroadcastFaultMode,
  type FaultSettings,
  Faults,
  type QueryFault,
} from './faults.js';
export { DEVNET_MODELS, type DevAccount, GNK, MINIMAX_MODEL, QWEN_MODEL } from './genesis.js';
export type { HostClock } from './host/block-clock.js';
export type { DevshardHostsControl } from './host/control.js';
export { HOST_FAULT_MODES, type HostFault, type HostFaultMode, type HostFaults } from './host/faults.js';
export type { AppliedDiff, Execution, HostSession } from './host/session.js';
export type { DevshardHostsOptions, SigningKeyChoice } from './host/session-store.js';
export { sendCompletion } from './model/chat-reply.js';
export { type ChatMessage, type ChatRequest, chatRequestSchema, promptText } from './model/chat-request.js';
export {
  type Completion,
  completionBody,
  MockModel,
  type MockModelLatency,
  streamFrames,
} from './model/mock-model.js';
export { countTokens, tokenize } from './model/tokenizer.js';
export type { ConfirmationPocPhase, EpochPhase, EpochStages } from './node/epoch-schedule.js';
export { DEFAULT_PORTS, type DevnetOptions, type DevnetPorts } from './options.js';
export type { ParticipantContext, ParticipantPlugin } from './participant/participant-server.js';
