import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { txOf } from '../proto/tx-builders.js';
import { signDiff } from '../signing/diff.js';
import { makeFixture, startTx } from '../testing/session-fixture.js';
import { decodeBase64, encodeBase64 } from './base64.js';
import { parseJsonLossless, stringifyJsonLossless } from './lossless.js';
import {
  decodeDevshardEvent,
  decodeInferenceRequest,
  decodeSignaturesResponse,
  diffFromWire,
  diffToWire,
  encodeInferenceRequest,
  encodeMetaEvent,
  encodeReceiptEvent,
  encodeSignaturesResponse,
} from './wire.js';

describe('lossless JSON', () => {
  it('keeps integers above 2^53 exact in both directions', () => {
    const text = '{"a":18446744073709551615,"b":9007199254740993,"c":-5,"d":1.5,"e":[true,null,"x"]}';
    const v = parseJsonLossless(text) as Record<string, unknown>;
    expect(v.a).toBe(18446744073709551615n);
    expect(v.b).toBe(9007199254740993n);
    expect(v.d).toBe(1.5);
    expect(stringifyJsonLossless(v as never)).toBe(text);
  });

  it('rejects malformed text', () => {
    for (const bad of ['{', '[1,]', '01', '{"a":1} x', '"unterminated'])
      expect(() => parseJsonLossless(bad)).toThrow();
  });
});

describe('base64', () => {
  it('is standard and strict', () => {
    expect(encodeBase64(Uint8Array.of(0xfb, 0xff))).toBe('+/8=');
    expect(decodeBase64('+/8=')).toEqual(Uint8Array.of(0xfb, 0xff));
    for (const bad of ['-_8=', '+/8', '+/9=', '+/8=\n', 'a b='])
      expect(() => decodeBase64(bad), bad).toThrow();
  });
});

describe('wire shapes (§4.3)', () => {
  const f = makeFixture({ tag: 'v5' });
  const diff = signDiff(f.user, f.escrowId, {
    nonce: 1n,
    txs: [startTx(1n), txOf.finalizeRound()],
    postStateRoot: new Uint8Array(32).fill(7),
  });

  it('round-trips an inference request with a diff and payload', () => {
    const text = encodeInferenceRequest({
      diffs: [diffToWire(diff)],
      nonce: 1n,
      payload: {
        prompt: new TextEncoder().encode('{"a":1}'),
        model: 'm',
        inputLength: 10n,
        maxTokens: 2n ** 60n,
        startedAt: 1_700_000_000n,
      },
      stream: true,
    });
    expect(text).toContain('"max_tokens":1152921504606846976');
    expect(text).not.toContain('force_height_sync_anchor');
    const back = decodeInferenceRequest(text);
    expect(back.payload?.maxTokens).toBe(2n ** 60n);
    expect(back.stream).toBe(true);
    const restored = diffFromWire(back.diffs[0]!, { strict: true });
    expect(restored.txs.map((t) => t.bytes)).toEqual(diff.txs.map((t) => t.bytes));
    expect(restored.userSig).toEqual(diff.userSig);
    expect(restored.postStateRoot).toEqual(diff.postStateRoot);
  });

  it('omits an empty post_state_root', () => {
    const noRoot = { ...diff, postStateRoot: new Uint8Array(0) };
    const text = encodeInferenceRequest({ diffs: [diffToWire(noRoot)], nonce: 1n });
    expect(text).not.toContain('post_state_root');
    expect(diffFromWire(decodeInferenceRequest(text).diffs[0]!).postStateRoot).toHaveLength(0);
  });

  it('refuses, strictly, a txs blob whose inner nonce differs or is not canonical', () => {
    const wire = diffToWire(diff);
    expect(() => diffFromWire({ ...wire, nonce: 2n }, { strict: true })).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.NonCanonical }),
    );
    const padded = new Uint8Array([...wire.txs, 0x18, 0x00]);
    expect(() => diffFromWire({ ...wire, txs: padded }, { strict: true })).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.NonCanonical }),
    );
    expect(diffFromWire({ ...wire, nonce: 2n }).nonce).toBe(2n); // Go-lenient reading
  });

  it('encodes and classifies receipt, meta and chunk events', () => {
    const receipt = encodeReceiptEvent({
      nonce: 2n ** 63n,
      stateSig: Uint8Array.of(1),
      stateHash: Uint8Array.of(2),
      receipt: Uint8Array.of(3),
      confirmedAt: 1_700_000_000n,
      observedHeight: 5n,
      observedBlockHash: Uint8Array.of(4),
    });
    expect(receipt).toBe(
      '{"devshard_receipt":{"state_sig":"AQ==","state_hash":"Ag==","nonce":9223372036854775808,"receipt":"Aw==","confirmed_at":1700000000,"observed_height":5,"observed_block_hash":"BA=="}}',
    );
    const r = decodeDevshardEvent(receipt);
    expect(r.type === 'receipt' && r.event.nonce).toBe(2n ** 63n);
    expect(decodeDevshardEvent('{"devshard_receipt":{"nonce":3}}')).toEqual({
      type: 'receipt',
      event: { nonce: 3n },
    });
    const meta = decodeDevshardEvent(encodeMetaEvent({ mempool: [Uint8Array.of(0x42, 0)] }));
    expect(meta).toEqual({ type: 'meta', event: { mempool: [Uint8Array.of(0x42, 0)] } });
    expect(decodeDevshardEvent('{"choices":[]}').type).toBe('other');
  });

  it('reads and writes the signatures response', () => {
    const text = encodeSignaturesResponse(
      new Map([
        [3, Uint8Array.of(9)],
        [0, Uint8Array.of(8)],
      ]),
    );
    expect(text).toBe('{"signatures":{"0":"CA==","3":"CQ=="}}');
    expect(decodeSignaturesResponse(text)).toEqual(
      new Map([
        [0, Uint8Array.of(8)],
        [3, Uint8Array.of(9)],
      ]),
    );
    expect(() => decodeSignaturesResponse('{"signatures":{"01":"CA=="}}')).toThrow();
  });
});
