import { PrivateKey, recoverAddress, sha256 } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { stateSignatureDigest } from '../hash/root-formula.js';
import { diffTxsBlob, encodeDiffContent } from '../proto/diff-content.js';
import { newMsg } from '../proto/tx-builders.js';
import { startTx } from '../testing/session-fixture.js';
import { diffSigningBytes, recoverDiffSigner, signDiff } from './diff.js';
import { DOMAIN_TIMEOUT_VOTE } from './domains.js';
import { recoverExecutorReceiptSigner, signExecutorReceipt } from './executor-receipt.js';
import { heightAckBytes, recoverHeightAckSigner, signHeightAck } from './height-ack.js';
import { memoizeRecover, signPreimage } from './primitive.js';
import {
  recoverFinishProposer,
  recoverValidationProposer,
  recoverValidationVoteProposer,
  signFinish,
  signValidation,
  signValidationVote,
} from './proposer.js';
import { recoverRequestSigner, requestSignaturePreimage, signRequest } from './request.js';
import { recoverStateSigner, signStateRoot } from './state-signature.js';
import {
  recoverErrorMissVoter,
  recoverTimeoutVoter,
  signErrorMissVote,
  signTimeoutVote,
  timeoutVoteBytes,
} from './votes.js';

const key = PrivateKey.fromHex('01'.repeat(32));
const other = PrivateKey.fromHex('02'.repeat(32));

describe('signing primitive (§2.1, §2.2)', () => {
  it('signs sha256(x) as 65-byte R‖S‖V with V ∈ {0,1}', () => {
    expect(key.address).toBe('gonka10xcqpzrky6eff2g52qdye53xkk9jxkvr34az8p');
    const sig = signPreimage(key, Uint8Array.of(1, 2, 3));
    expect(sig).toHaveLength(65);
    expect(sig[64]! <= 1).toBe(true);
    expect(recoverAddress(sha256(Uint8Array.of(1, 2, 3)), sig)).toBe(key.address);
  });

  it('memoizes recovery without changing answers', () => {
    const recover = memoizeRecover(undefined, 2);
    const sig = signPreimage(key, Uint8Array.of(9));
    const digest = sha256(Uint8Array.of(9));
    expect(recover(digest, sig)).toBe(key.address);
    expect(recover(digest, sig)).toBe(key.address);
    expect(recover(sha256(Uint8Array.of(8)), sig)).not.toBe(key.address);
  });
});

describe('signature recipes (§2.4)', () => {
  it('diff user signature over DiffContent{nonce, txs, escrow_id, post_state_root}', () => {
    const diff = { nonce: 7n, txs: [startTx(7n)], postStateRoot: new Uint8Array(0) };
    const signed = signDiff(key, '42', diff);
    expect(recoverDiffSigner('42', signed)).toBe(key.address);
    expect(recoverDiffSigner('43', signed)).not.toBe(key.address);
    expect(recoverDiffSigner('42', { ...signed, postStateRoot: new Uint8Array(32) })).not.toBe(key.address);
    // post_state_root omitted when empty: field 4 absent.
    const bytes = diffSigningBytes('42', diff);
    expect(bytes.at(-4)).toBe(0x1a); // field 3, escrow id "42"
  });

  it('diff preimage = the remembered txs blob ‖ fields 3–4, the bytes of one full encoding', () => {
    const txs = [startTx(9n), startTx(10n)];
    for (const postStateRoot of [new Uint8Array(0), new Uint8Array(32).fill(5)]) {
      const diff = { nonce: 9n, txs, postStateRoot };
      const full = encodeDiffContent({ nonce: 9n, txs, escrowId: '42', postStateRoot });
      expect(diffSigningBytes('42', diff)).toEqual(full);
      expect(diffSigningBytes('42', diff)).toEqual(full); // the blob now comes from the memo
    }
    // The same list under another nonce, or changed since, is encoded anew.
    expect(diffTxsBlob(10n, txs)).toEqual(encodeDiffContent({ nonce: 10n, txs }));
    txs.push(startTx(11n));
    expect(diffTxsBlob(10n, txs)).toEqual(encodeDiffContent({ nonce: 10n, txs }));
    txs[0] = startTx(12n);
    expect(diffTxsBlob(10n, txs)).toEqual(encodeDiffContent({ nonce: 10n, txs }));
  });

  it('request header: lowercase hex over a double SHA-256', () => {
    const body = new TextEncoder().encode('{"nonce":1}');
    const hex = signRequest(key, '42', body, 1_700_000_000n);
    expect(hex).toMatch(/^[0-9a-f]{130}$/);
    const x = requestSignaturePreimage('42', body, 1_700_000_000n);
    expect(x).toEqual(
      sha256(new Uint8Array([...new TextEncoder().encode('42'), ...body, 0, 0, 0, 0, 0x65, 0x53, 0xf1, 0])),
    );
    expect(recoverAddress(sha256(x), Buffer.from(hex, 'hex'))).toBe(key.address);
    expect(recoverRequestSigner('42', body, 1_700_000_000n, hex)).toBe(key.address);
    expect(recoverRequestSigner('42', body, 1_700_000_001n, hex)).not.toBe(key.address);
    expect(recoverRequestSigner('42', body, 1_700_000_000n, 'zz')).toBeNull();
  });

  it('executor receipt, including the v5 observed fields', () => {
    const content = {
      inferenceId: 1n,
      model: 'm',
      escrowId: '42',
      confirmedAt: 5n,
      observedHeight: 9n,
      observedBlockHash: Uint8Array.of(1),
    };
    const sig = signExecutorReceipt(key, content);
    expect(recoverExecutorReceiptSigner(content, sig)).toBe(key.address);
    expect(recoverExecutorReceiptSigner({ ...content, observedHeight: 0n }, sig)).not.toBe(key.address);
  });

  it('finish, validation and validation vote proposer signatures (sig field cleared)', () => {
    const finish = signFinish(
      key,
      newMsg.finishInference({ inferenceId: 1n, executorSlot: 2, escrowId: '42' }),
    );
    expect(recoverFinishProposer(finish)).toBe(key.address);
    expect(recoverFinishProposer({ ...finish, inputTokens: 1n })).not.toBe(key.address);
    const validation = signValidation(
      key,
      newMsg.validation({ inferenceId: 1n, validatorSlot: 3, escrowId: '42' }),
    );
    expect(recoverValidationProposer(validation)).toBe(key.address);
    expect(recoverValidationProposer(validation, 'tagged')).not.toBe(key.address);
    const tagged = signValidationVote(
      key,
      newMsg.validationVote({ inferenceId: 1n, voterSlot: 3 }),
      'tagged',
    );
    expect(recoverValidationVoteProposer(tagged, 'tagged')).toBe(key.address);
    expect(recoverValidationVoteProposer(tagged, 'plain')).not.toBe(key.address);
  });

  it('timeout and error-miss votes, plain and domain-tagged (§11)', () => {
    const content = { escrowId: 'escrow-1', inferenceId: 1n, reason: 1, accept: true };
    expect(Buffer.from(timeoutVoteBytes(content)).toString('hex')).toBe('0a08657363726f772d31100118012001');
    expect(
      new TextDecoder().decode(timeoutVoteBytes(content, 'tagged').subarray(0, DOMAIN_TIMEOUT_VOTE.length)),
    ).toBe('devshard.timeoutvote.v1');
    const sig = signTimeoutVote(key, content);
    expect(recoverTimeoutVoter(content, sig)).toBe(key.address);
    expect(recoverTimeoutVoter({ ...content, accept: false }, sig)).not.toBe(key.address);
    const miss = { escrowId: '42', inferenceId: 3n, accept: true, responseHash: Uint8Array.of(1) };
    const missSig = signErrorMissVote(other, miss, 'tagged');
    expect(recoverErrorMissVoter(miss, missSig, 'tagged')).toBe(other.address);
  });

  it('state signature over StateSignatureContent (chain-compatible digest)', () => {
    const root = new Uint8Array(32).fill(3);
    const sig = signStateRoot(key, root, '42', 9n);
    expect(recoverAddress(stateSignatureDigest(root, '42', 9n), sig)).toBe(key.address);
    expect(recoverStateSigner(root, '42', 9n, sig)).toBe(key.address);
    expect(recoverStateSigner(root, '42', 10n, sig)).not.toBe(key.address);
  });

  it('height ack host_sig over the domain tag and fields 1–7', () => {
    const ack = signHeightAck(
      key,
      newMsg.heightAck({ turnSeq: 1n, refNonce: 2n, slotId: 1, peerSeen: Uint8Array.of(1) }),
    );
    expect(new TextDecoder().decode(heightAckBytes(ack).subarray(0, 17))).toBe('heightsync.ack.v1');
    expect(recoverHeightAckSigner(ack)).toBe(key.address);
    expect(recoverHeightAckSigner({ ...ack, hostSig: new Uint8Array(0) })).toBeNull();
  });
});
