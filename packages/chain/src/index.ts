// Public surface of @gonka-gateway/chain: keys and signatures, protobuf helpers, escrow messages.
export { ADDRESS_PREFIX, addressFromPublicKey, decodeAddress, isAddress } from './crypto/address.js';
export { GONKA_HD_PATH, PrivateKey } from './crypto/private-key.js';
export { recoverAddress } from './crypto/recover.js';
export {
  isValidPrivateKey,
  publicKeyFromPrivate,
  recoverPublicKey,
  SECP256K1_ORDER,
  sha256,
  signDigest64,
  signDigest65,
  verifyDigest64,
} from './crypto/secp256k1.js';
export {
  DIRECT_SIGNING_SCHEMES,
  type DirectSigningScheme,
  directRequestMessage,
} from './direct/message.js';
export { concat, type ProtoField, ProtoWriter, readFields } from './encoding/proto.js';
export {
  BASE_DENOM,
  buildUnorderedTx,
  type SignedTx,
  type TxFee,
  type UnorderedTxInput,
} from './tx/build-tx.js';
export {
  type DevshardSettlementHostStats,
  type DevshardSlotSignature,
  decodeHostStats,
  decodeMsgCreateDevshardEscrow,
  decodeMsgSettleDevshardEscrow,
  encodeHostStats,
  encodeMsgCreateDevshardEscrow,
  encodeMsgSettleDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type MsgCreateDevshardEscrow,
  type MsgSettleDevshardEscrow,
} from './tx/escrow-messages.js';
export { txHash } from './tx/tx-hash.js';
