// The ante handler: the checks a Cosmos SDK 0.53 chain runs before any message, in its decorator
// order (timeouts, unordered rules, memo, tx-size gas, fee check and deduction, pubkey, sequence,
// signature, unordered nonce, sequence increment). A failure throws a TxError with the SDK's code.
// Runs on a branch: the caller decides whether its writes (fee, pubkey, nonce) are kept.
import { addressFromPublicKey, sha256, verifyDigest64 } from '@gonka-gateway/chain';
import { SignDoc } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import { rfc3339Nano, toBase64 } from '../encoding.js';
import { DENOM, moduleAddress, transfer } from './bank.js';
import { type DecodedTx, SIGN_MODE_DIRECT } from './decode-tx.js';
import { SdkErrors } from './errors.js';
import { makeEvent, type TxEvent } from './events.js';
import type { ExecEnv } from './exec-env.js';
import { anteGas, requiredFee } from './fees.js';
import type { StateTx } from './stores.js';

/** SDK default for unordered txs (chain-and-network.md §2.2, §6 item 7). */
export const MAX_UNORDERED_TTL_NS = 10n * 60n * 1_000_000_000n;
const MAX_MEMO_BYTES = 256;

export const unorderedNonceKey = (signer: string, timeoutNs: bigint): string => `${signer}/${timeoutNs}`;

function checkTimeouts(tx: DecodedTx, env: ExecEnv): void {
  if (tx.timeoutHeight !== 0n && env.height > tx.timeoutHeight) {
    throw SdkErrors.txTimeoutHeight(`block height: ${env.height}, timeout height: ${tx.timeoutHeight}`);
  }
  if (tx.timeoutTimestampNs !== null && env.timeNs > tx.timeoutTimestampNs) {
    throw SdkErrors.txTimeout(
      `block time: ${rfc3339Nano(env.timeNs)}, timeout timestamp: ${rfc3339Nano(tx.timeoutTimestampNs)}`,
    );
  }
  if (!tx.unordered) return;
  if (tx.timeoutTimestampNs === null) {
    throw SdkErrors.invalidRequest('unordered transaction must have timeout_timestamp set');
  }
  if (tx.timeoutTimestampNs > env.timeNs + MAX_UNORDERED_TTL_NS) {
    throw SdkErrors.invalidRequest('unordered tx ttl exceeds 10m0s');
  }
  if (tx.sequence !== 0n) {
    throw SdkErrors.wrongSequence(`unordered transaction must have sequence 0, got ${tx.sequence}`);
  }
}

function verifySignature(
  tx: DecodedTx,
  env: ExecEnv,
  pubKey: Uint8Array,
  accountNumber: bigint,
  sequence: bigint,
) {
  if (tx.signMode !== SIGN_MODE_DIRECT) {
    throw SdkErrors.unauthorized(
      `signature verification failed; sign mode ${tx.signMode} is not supported by the devnet`,
    );
  }
  if (env.chain.verifiedSignatures.get(tx.hash) === accountNumber) return;
  const signBytes = SignDoc.encode(
    SignDoc.fromPartial({
      bodyBytes: tx.bodyBytes,
      authInfoBytes: tx.authInfoBytes,
      chainId: env.chain.chainId,
      accountNumber,
    }),
  ).finish();
  // verifyDigest64 rejects any length but 64 and high-S, like the SDK's secp256k1 verifier.
  if (!verifyDigest64(tx.signature, sha256(signBytes), pubKey)) {
    throw SdkErrors.unauthorized(
      `signature verification failed; please verify account number (${accountNumber}), sequence (${sequence}) and chain-id (${env.chain.chainId})`,
    );
  }
  env.chain.verifiedSignatures.set(tx.hash, accountNumber);
}

/** Runs the ante checks on `state` and returns the `tx` events; throws TxError on rejection. */
export function runAnte(state: StateTx, tx: DecodedTx, env: ExecEnv): TxEvent[] {
  checkTimeouts(tx, env);
  if (new TextEncoder().encode(tx.memo).length > MAX_MEMO_BYTES) {
    throw SdkErrors.memoTooLarge(`maximum number of characters is ${MAX_MEMO_BYTES}`);
  }
  const gas = anteGas(tx);
  if (env.mode !== 'simulate' && gas > tx.gasLimit) {
    throw SdkErrors.outOfGas(`out of gas in location: txSize; gasWanted: ${tx.gasLimit}, gasUsed: ${gas}`);
  }

  const signer = tx.messages[0]!.signer;
  if (tx.messages.some((m) => m.signer !== signer)) {
    throw SdkErrors.unauthorized(
      'the devnet accepts single-signer txs only; messages name different signers',
    );
  }
  const account = state.accounts.get(signer);
  if (!account) throw SdkErrors.unknownAddress(`fee payer address: ${signer} does not exist`);

  // DeductFeeDecorator: the min-gas-price check is a CheckTx (mempool) rule, skipped in simulation;
  // the fee group check of §2.3 also runs in DeliverTx on this chain.
  if (env.mode !== 'simulate') {
    const required = requiredFee(tx, env);
    if (tx.fee < required) {
      throw SdkErrors.insufficientFee(
        `insufficient fees; got: ${tx.fee}${DENOM} required: ${required}${DENOM}`,
      );
    }
  }
  const feeEvents = transfer(
    state,
    env.chain.faults,
    signer,
    moduleAddress('fee_collector'),
    tx.fee,
    'failed to deduct fees',
  );

  const pubKey = tx.signerPubKey ?? account.pubKey;
  if (!pubKey) throw SdkErrors.invalidPubKey(`pubkey on account ${signer} is not set`);
  if (addressFromPublicKey(pubKey) !== signer) {
    throw SdkErrors.invalidPubKey(`pubKey does not match signer address ${signer} with signer index: 0`);
  }

  if (!tx.unordered && tx.sequence !== account.sequence) {
    throw SdkErrors.wrongSequence(
      `account sequence mismatch, expected ${account.sequence}, got ${tx.sequence}`,
    );
  }
  if (env.mode !== 'simulate') verifySignature(tx, env, pubKey, account.accountNumber, tx.sequence);

  if (tx.unordered) {
    const key = unorderedNonceKey(signer, tx.timeoutTimestampNs!);
    if (state.unorderedNonces.get(key) !== undefined) throw SdkErrors.invalidRequest('tx is duplicated');
    state.unorderedNonces.set(key, tx.timeoutTimestampNs!);
  }
  state.accounts.set(signer, {
    ...account,
    pubKey: account.pubKey ?? pubKey,
    sequence: tx.unordered ? account.sequence : account.sequence + 1n,
  });

  return [
    makeEvent('tx', { fee: `${tx.fee}${DENOM}`, fee_payer: signer }),
    makeEvent('tx', { acc_seq: `${signer}/${tx.sequence}` }),
    makeEvent('tx', { signature: toBase64(tx.signature) }),
    ...feeEvents,
  ];
}
