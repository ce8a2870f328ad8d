// Property: random valid-ish diff sequences composed best-effort by a gateway replica and applied
// strictly by host replicas (directly, through the JSON wire form, and by a later replay) always give
// equal roots; money is conserved; and any single-byte tamper of a signed diff is rejected.
import type { PrivateKey } from '@gonka-gateway/chain';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeDiffWire, diffFromWire, diffToWire, encodeDiffWire } from '../json/wire.js';
import type { EncodedTx } from '../proto/devshard-tx.js';
import { txOf } from '../proto/tx-builders.js';
import { TimeoutReason } from '../proto/tx-messages.js';
import { buildSettlementPayload } from '../settlement/payload.js';
import { type SignedDiff, signDiff } from '../signing/diff.js';
import { memoizeRecover } from '../signing/primitive.js';
import {
  confirmTx,
  errorMissTx,
  type Fixture,
  finishTx,
  keyN,
  makeFixture,
  startTx,
  timeoutTx,
  validationTx,
  voteTx,
} from '../testing/session-fixture.js';
import { type ApplyContext, warmKeyLookupFromBindings } from './apply-context.js';
import { applyDiff } from './apply-diff.js';
import { composeDiff } from './compose.js';
import type { WarmKeyBinding } from './effects.js';
import { InferenceStatus, type SessionState } from './types.js';

const KINDS = [
  'start',
  'confirm',
  'finish',
  'timeout',
  'validation',
  'vote',
  'errorMiss',
  'finalize',
  'stale',
  'empty',
] as const;
type Action = { kind: (typeof KINDS)[number]; a: number; b: number; c: boolean; d: number };

const WEIGHTS: Record<Action['kind'], number> = {
  start: 5,
  confirm: 6,
  finish: 6,
  timeout: 2,
  validation: 3,
  vote: 3,
  errorMiss: 1,
  finalize: 1,
  stale: 1,
  empty: 1,
};

const action = fc.record({
  kind: fc.oneof(...KINDS.map((k) => ({ arbitrary: fc.constant(k), weight: WEIGHTS[k] }))),
  a: fc.nat({ max: 1_000 }),
  b: fc.nat({ max: 1_000 }),
  c: fc.boolean(),
  d: fc.nat({ max: 1_000 }),
});

const recover = memoizeRecover();
const warm = keyN(1_000);

function setup(): { f: Fixture; ctx: ApplyContext; keyForSlot: (slot: number) => PrivateKey } {
  // Six slots, host 0 owns slots 0 and 3 (weight 2); slot 1 may sign with a warm key.
  const f = makeFixture({
    tag: 'v5',
    escrowId: '77',
    hostCount: 6,
    slots: (h) => [h[0]!.address, h[1]!.address, h[2]!.address, h[0]!.address, h[4]!.address, h[5]!.address],
    config: {
      createDevshardFee: 10n,
      feePerNonce: 1n,
      voteThreshold: 3,
      sealGraceNonces: 3n,
      sealGraceSeconds: 40n,
      executionTimeout: 0n,
      autoSealEveryNNonces: 2n,
      maxTokensFloor: 64n,
    },
  });
  const isWarmKey = (cold: string, signer: string) => cold === f.hosts[1]!.address && signer === warm.address;
  const keyForSlot = (slot: number) => (slot === 3 ? f.hosts[0]! : f.hosts[slot]!);
  return { f, ctx: { isWarmKey, recover }, keyForSlot };
}

const pick = <T>(items: readonly T[], n: number): T | undefined =>
  items.length === 0 ? undefined : items[n % items.length];

function candidatesFor(
  f: Fixture,
  s: SessionState,
  actions: readonly Action[],
  keyForSlot: (slot: number) => PrivateKey,
) {
  const nonce = s.latestNonce + 1n;
  const byStatus = (...st: number[]) => [...s.inferences.values()].filter((r) => st.includes(r.status));
  const out: EncodedTx[] = [];
  let started = false;
  for (const act of actions) {
    const signerFor = (slot: number) =>
      slot === 1 && act.d % 3 === 0 ? warm : act.d % 11 === 0 ? keyN(5_000) : keyForSlot(slot);
    switch (act.kind) {
      case 'start':
        if (!started)
          out.push(startTx(nonce, { maxTokens: 64n + BigInt(act.a % 100), inputLength: BigInt(act.b % 60) }));
        started = true;
        break;
      case 'confirm': {
        const r = pick(byStatus(InferenceStatus.Pending), act.a);
        if (r) {
          out.push(
            confirmTx(f, r.id, {
              signer: signerFor(r.executorSlot),
              confirmedAt: 1_000n + nonce * 10n,
              start: { maxTokens: r.maxTokens, inputLength: r.inputLength },
            }),
          );
        }
        break;
      }
      case 'finish': {
        const r = pick(byStatus(InferenceStatus.Started), act.a);
        if (r) {
          out.push(
            finishTx(f, r.id, {
              slot: r.executorSlot,
              signer: signerFor(r.executorSlot),
              inputTokens: BigInt(act.b % 120),
              outputTokens: BigInt(act.d % 120),
            }),
          );
        }
        break;
      }
      case 'timeout': {
        const r = pick(byStatus(InferenceStatus.Pending, InferenceStatus.Started), act.a);
        if (r) {
          // Mostly enough accepting voters; sometimes one short, sometimes a rejecting vote.
          const voters = [0, 1, 2, 4, 5]
            .filter((slot, i) => slot !== r.executorSlot && (i > 1 || ((act.b >> i) & 1) === 1))
            .map((slot, i) => ({ slot, accept: ((act.d >> i) & 7) !== 0, signer: signerFor(slot) }));
          const reason = act.c ? TimeoutReason.Refused : TimeoutReason.Execution;
          out.push(timeoutTx(f, r.id, reason, voters));
        }
        break;
      }
      case 'validation': {
        const r = pick(byStatus(2, 3, 4, 5), act.a);
        if (r) out.push(validationTx(f, r.id, act.b % 6, act.c, { signer: signerFor(act.b % 6) }));
        break;
      }
      case 'vote': {
        const r = pick(byStatus(InferenceStatus.Challenged), act.a);
        if (r) out.push(voteTx(f, r.id, act.b % 6, act.c, { signer: signerFor(act.b % 6) }));
        break;
      }
      case 'errorMiss': {
        const r = pick(byStatus(InferenceStatus.Finished), act.a);
        if (r) {
          const voters = [0, 1, 2, 4, 5]
            .filter((slot, i) => slot !== r.executorSlot && (i > 1 || ((act.b >> i) & 1) === 1))
            .map((slot) => ({ slot }));
          out.push(errorMissTx(f, r.id, voters, r.responseHash));
        }
        break;
      }
      case 'finalize':
        out.push(txOf.finalizeRound());
        break;
      case 'stale':
        out.push(finishTx(f, BigInt(act.a % 40) + 1n, { slot: act.b % 6 }));
        break;
      case 'empty':
        break;
    }
  }
  return out;
}

/** Amount = balance + fees + Σ host cost + reservations of live Pending/Started records. */
function conserved(s: SessionState, amount: bigint): boolean {
  const cost = s.hostStats.reduce((a, h) => a + h.cost, 0n);
  let held = 0n;
  for (const r of s.inferences.values()) if (r.status <= InferenceStatus.Started) held += r.reservedCost;
  return s.balance + s.fees + cost + held === amount;
}

describe('gateway and host replicas', () => {
  it('agree on every root for random diff sequences', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(action, { minLength: 1, maxLength: 4 }), { minLength: 8, maxLength: 40 }),
        (steps) => {
          const { f, ctx, keyForSlot } = setup();
          let gateway = f.state;
          let hostA = f.state;
          let hostB = f.state;
          const log: { diff: SignedDiff; bindings: readonly WarmKeyBinding[] }[] = [];
          for (const actions of steps) {
            let composed: ReturnType<typeof composeDiff>;
            try {
              composed = composeDiff(gateway, candidatesFor(f, gateway, actions, keyForSlot), ctx);
            } catch {
              continue; // aborted composition (e.g. a start above the balance): nothing consumed
            }
            const signed = signDiff(f.user, f.escrowId, composed.diff);
            gateway = composed.state;
            hostA = applyDiff(hostA, signed, ctx).state;
            const wire = decodeDiffWire(encodeDiffWire(diffToWire(signed)));
            hostB = applyDiff(hostB, diffFromWire(wire, { strict: true }), ctx).state;
            expect(hostA.root).toEqual(gateway.root);
            expect(hostB.root).toEqual(gateway.root);
            expect(conserved(gateway, 1_000_000n)).toBe(true);
            log.push({ diff: signed, bindings: composed.effects.warmKeysBound });
          }
          // A later replica replays the log with the persisted warm-key bindings only (§5.7).
          const lookup = warmKeyLookupFromBindings(log.flatMap((l) => l.bindings));
          let replay = f.state;
          for (const { diff } of log)
            replay = applyDiff(replay, diff, { isWarmKey: lookup, recover, replay: true }).state;
          expect(replay.root).toEqual(gateway.root);
          if (gateway.phase === 2) expect(buildSettlementPayload(gateway).stateRoot).toEqual(gateway.root);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('reject any single-byte tamper of a signed diff', () => {
    const { f, ctx } = setup();
    const steps: EncodedTx[][] = [
      [startTx(1n, { maxTokens: 64n })],
      [confirmTx(f, 1n, { confirmedAt: 1_010n, start: { maxTokens: 64n } })],
      [finishTx(f, 1n), startTx(3n, { maxTokens: 64n })],
      [txOf.finalizeRound()],
    ];
    const states: SessionState[] = [f.state];
    const diffs: SignedDiff[] = [];
    for (const txs of steps) {
      const composed = composeDiff(states.at(-1)!, txs, ctx);
      diffs.push(signDiff(f.user, f.escrowId, composed.diff));
      states.push(composed.state);
    }
    const texts = diffs.map((d) => encodeDiffWire(diffToWire(d)));
    const hostApply = (i: number, text: string) =>
      applyDiff(states[i]!, diffFromWire(decodeDiffWire(text), { strict: true }), ctx);
    texts.forEach((t, i) => {
      expect(hostApply(i, t).state.root).toEqual(states[i + 1]!.root);
    });

    // Binary fields of the diff.
    fc.assert(
      fc.property(
        fc.nat({ max: diffs.length - 1 }),
        fc.constantFrom('txs', 'userSig', 'postStateRoot'),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (i, field, pos, delta) => {
          const wire = diffToWire(diffs[i]!);
          const bytes = Uint8Array.from(wire[field as 'txs']!);
          const at = pos % bytes.length;
          bytes[at] = bytes[at]! ^ delta;
          const tampered = encodeDiffWire({ ...wire, [field]: bytes });
          expect(() => hostApply(i, tampered)).toThrow();
        },
      ),
      { numRuns: 150 },
    );
    // Any character of the DiffJSON text.
    fc.assert(
      fc.property(
        fc.nat({ max: diffs.length - 1 }),
        fc.nat(),
        fc.integer({ min: 32, max: 126 }),
        (i, pos, code) => {
          const text = texts[i]!;
          const at = pos % text.length;
          fc.pre(text.charCodeAt(at) !== code);
          const tampered = text.slice(0, at) + String.fromCharCode(code) + text.slice(at + 1);
          expect(() => hostApply(i, tampered)).toThrow();
        },
      ),
      { numRuns: 300 },
    );
  });
});
