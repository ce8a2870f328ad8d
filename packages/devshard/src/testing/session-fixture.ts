// Test support: deterministic keys, a session factory and builders for signed
// transactions, shaped after the reference journal fixture (devshard/state/journal_test.go).
import { PrivateKey } from '@gonka-gateway/chain';
import type { EncodedTx } from '../proto/devshard-tx.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { signExecutorReceipt } from '../signing/executor-receipt.js';
import { signFinish, signValidation, signValidationVote } from '../signing/proposer.js';
import { signErrorMissVote, signTimeoutVote } from '../signing/votes.js';
import { createSessionState } from '../state/init.js';
import type { SessionConfig, SessionState } from '../state/types.js';

export const keyN = (n: number) => PrivateKey.fromHex(n.toString(16).padStart(64, '0'));

export interface Fixture {
  readonly escrowId: string;
  readonly hosts: readonly PrivateKey[];
  readonly user: PrivateKey;
  readonly state: SessionState;
}

export const journalConfig: SessionConfig = {
  tokenPrice: 1n,
  createDevshardFee: 0n,
  feePerNonce: 0n,
  voteThreshold: 1,
  validationRate: 0,
  sealGraceNonces: 6n,
  sealGraceSeconds: 3600n,
  autoSealEveryNNonces: 1n,
  refusalTimeout: 0n,
  executionTimeout: 0n,
  maxTokensFloor: 0n,
};

export function makeFixture(
  options: {
    escrowId?: string;
    tag?: string;
    hostCount?: number;
    config?: Partial<SessionConfig>;
    amount?: bigint;
    slots?: (hosts: readonly PrivateKey[]) => string[];
  } = {},
): Fixture {
  const hosts = Array.from({ length: options.hostCount ?? 5 }, (_, i) => keyN(i + 1));
  const user = keyN(100);
  const escrowId = options.escrowId ?? 'escrow-journal';
  const state = createSessionState({
    escrowId,
    tag: options.tag ?? 'v4.1',
    creator: user.address,
    slots: options.slots ? options.slots(hosts) : hosts.map((h) => h.address),
    amount: options.amount ?? 1_000_000n,
    config: { ...journalConfig, ...options.config },
  });
  return { escrowId, hosts, user, state };
}

export const PROMPT_HASH = new TextEncoder().encode('prompt');
export const RESPONSE_HASH = new TextEncoder().encode('response');

export function startTx(id: bigint, fields: Parameters<typeof newMsg.startInference>[0] = {}): EncodedTx {
  return txOf.startInference(
    newMsg.startInference({
      inferenceId: id,
      promptHash: PROMPT_HASH,
      model: 'llama',
      inputLength: 100n,
      maxTokens: 50n,
      startedAt: 1000n,
      ...fields,
    }),
  );
}

/** Confirm signed by `signer` (default: the executor slot's key, id mod N). */
export function confirmTx(
  f: Pick<Fixture, 'escrowId' | 'hosts'>,
  id: bigint,
  options: {
    signer?: PrivateKey;
    confirmedAt?: bigint;
    start?: { maxTokens?: bigint; inputLength?: bigint };
  } = {},
): EncodedTx {
  const signer = options.signer ?? f.hosts[Number(id % BigInt(f.hosts.length))]!;
  const confirmedAt = options.confirmedAt ?? 1000n;
  const sig = signExecutorReceipt(signer, {
    inferenceId: id,
    promptHash: PROMPT_HASH,
    model: 'llama',
    inputLength: options.start?.inputLength ?? 100n,
    maxTokens: options.start?.maxTokens ?? 50n,
    startedAt: 1000n,
    escrowId: f.escrowId,
    confirmedAt,
  });
  return txOf.confirmStart(newMsg.confirmStart({ inferenceId: id, executorSig: sig, confirmedAt }));
}

export function finishTx(
  f: Pick<Fixture, 'escrowId' | 'hosts'>,
  id: bigint,
  options: {
    signer?: PrivateKey;
    slot?: number;
    inputTokens?: bigint;
    outputTokens?: bigint;
    escrowId?: string;
  } = {},
): EncodedTx {
  const slot = options.slot ?? Number(id % BigInt(f.hosts.length));
  const signer = options.signer ?? f.hosts[slot]!;
  const msg = newMsg.finishInference({
    inferenceId: id,
    responseHash: RESPONSE_HASH,
    inputTokens: options.inputTokens ?? 80n,
    outputTokens: options.outputTokens ?? 40n,
    executorSlot: slot,
    escrowId: options.escrowId ?? f.escrowId,
  });
  return txOf.finishInference(signFinish(signer, msg));
}

export function validationTx(
  f: Pick<Fixture, 'escrowId' | 'hosts'>,
  id: bigint,
  slot: number,
  valid: boolean,
  options: { signer?: PrivateKey; style?: 'plain' | 'tagged' } = {},
): EncodedTx {
  const msg = newMsg.validation({ inferenceId: id, validatorSlot: slot, valid, escrowId: f.escrowId });
  return txOf.validation(signValidation(options.signer ?? f.hosts[slot]!, msg, options.style));
}

export function voteTx(
  f: Pick<Fixture, 'escrowId' | 'hosts'>,
  id: bigint,
  slot: number,
  voteValid: boolean,
  options: { signer?: PrivateKey; style?: 'plain' | 'tagged' } = {},
): EncodedTx {
  const msg = newMsg.validationVote({ inferenceId: id, voterSlot: slot, voteValid, escrowId: f.escrowId });
  return txOf.validationVote(signValidationVote(options.signer ?? f.hosts[slot]!, msg, options.style));
}

export function timeoutTx(
  f: Pick<Fixture, 'escrowId' | 'hosts'>,
  id: bigint,
  reason: number,
  voters: readonly { slot: number; accept?: boolean; signer?: PrivateKey; style?: 'plain' | 'tagged' }[] = [
    { slot: 0 },
    { slot: 1 },
  ],
): EncodedTx {
  const votes = voters.map((v) => {
    const accept = v.accept ?? true;
    const signature = signTimeoutVote(
      v.signer ?? f.hosts[v.slot]!,
      { escrowId: f.escrowId, inferenceId: id, reason, accept },
      v.style,
    );
    return newMsg.vote({ voterSlot: v.slot, accept, signature });
  });
  return txOf.timeoutInference(newMsg.timeoutInference({ inferenceId: id, reason, votes }));
}

export function errorMissTx(
  f: Pick<Fixture, 'escrowId' | 'hosts'>,
  id: bigint,
  voters: readonly { slot: number; accept?: boolean }[] = [{ slot: 0 }, { slot: 1 }],
  responseHash: Uint8Array = RESPONSE_HASH,
): EncodedTx {
  const votes = voters.map((v) => {
    const accept = v.accept ?? true;
    const signature = signErrorMissVote(f.hosts[v.slot]!, {
      escrowId: f.escrowId,
      inferenceId: id,
      accept,
      responseHash,
    });
    return newMsg.vote({ voterSlot: v.slot, accept, signature });
  });
  return txOf.errorMiss(newMsg.errorMiss({ inferenceId: id, votes }));
}
