// Executor receipt (devshard-protocol.md §2.4): the executor host signs ExecutorReceiptContent; the
// signature travels as MsgConfirmStart.executor_sig. The state machine rebuilds the content from the
// inference record plus the confirm's confirmed_at and (v5) observed fields.
import type { PrivateKey } from '@gonka-gateway/chain';
import { createMessage, encodeMessage } from '../proto/codec.js';
import { type ExecutorReceiptContent, ExecutorReceiptContentSchema } from '../proto/signed-contents.js';
import { defaultRecover, type RecoverFn, recoverPreimageSigner, signPreimage } from './primitive.js';

export function executorReceiptBytes(content: Partial<ExecutorReceiptContent>): Uint8Array {
  return encodeMessage(ExecutorReceiptContentSchema, createMessage(ExecutorReceiptContentSchema, content));
}

export function signExecutorReceipt(key: PrivateKey, content: Partial<ExecutorReceiptContent>): Uint8Array {
  return signPreimage(key, executorReceiptBytes(content));
}

export function recoverExecutorReceiptSigner(
  content: Partial<ExecutorReceiptContent>,
  signature: Uint8Array,
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(executorReceiptBytes(content), signature, recover);
}
