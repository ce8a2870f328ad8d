// Public surface of @gonka-gateway/devshard.
export { u32be, u64be, utf8 } from './hash/bytes.js';
export {
  composeStateRoot,
  encodeStateSignatureContent,
  hostStatsHash,
  SessionPhase,
  settlementStateRoot,
  stateSignatureDigest,
} from './hash/state-root.js';
