// MsgHeightAck.host_sig (devshard-protocol.md §2.4, §9 L2): Sign("heightsync.ack.v1" ‖ the ack with
// host_sig cleared). The reference marshals the cloned message, so unknown fields are covered too.
import type { PrivateKey } from '@gonka-gateway/chain';
import { encodeMessage } from '../proto/codec.js';
import { type MsgHeightAck, MsgHeightAckSchema } from '../proto/tx-messages.js';
import { DOMAIN_HEIGHT_ACK, withDomain } from './domains.js';
import { defaultRecover, type RecoverFn, recoverPreimageSigner, signPreimage } from './primitive.js';

export function heightAckBytes(ack: MsgHeightAck): Uint8Array {
  return withDomain(
    'tagged',
    DOMAIN_HEIGHT_ACK,
    encodeMessage(MsgHeightAckSchema, { ...ack, hostSig: new Uint8Array(0) }),
  );
}

export function signHeightAck(key: PrivateKey, ack: MsgHeightAck): MsgHeightAck {
  return { ...ack, hostSig: signPreimage(key, heightAckBytes(ack)) };
}

export function recoverHeightAckSigner(
  ack: MsgHeightAck,
  recover: RecoverFn = defaultRecover,
): string | null {
  if (ack.hostSig.length === 0) return null;
  return recoverPreimageSigner(heightAckBytes(ack), ack.hostSig, recover);
}
