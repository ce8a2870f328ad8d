import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { SessionPhase } from '../hash/root-formula.js';
import { keyN, makeFixture } from '../testing/session-fixture.js';
import { resolveSessionConfig, voteThresholdFor } from './config.js';
import { canonicalEscrowId, sessionFromEscrow } from './init.js';
import { profileForTag } from './profile.js';

const slots = (n: number) => Array.from({ length: n }, (_, i) => keyN(i + 1).address);

describe('session initialisation (§5.2)', () => {
  it('reproduces the §6 vectors from an initial state (5 slots, balance 1 000 000, fees 0)', () => {
    expect(bytesToHex(makeFixture({ tag: 'v4.1' }).state.root)).toBe(
      '8bce45d285169cbb096d923252d70d10c966378cfc654e6583d6dd4f800fbf7e',
    );
    expect(bytesToHex(makeFixture({ tag: 'v5' }).state.root)).toBe(
      '0957150e8e7233314894218aa88482bf6c9222f97e216386ffa0d577c3db41e0',
    );
  });

  it('charges the create fee and applies "zero means default"', () => {
    const { state, warnings } = sessionFromEscrow(
      { escrowId: 17n, creator: keyN(9).address, amount: 50_000n, slots: slots(16), voteThresholdFactor: 50 },
      { tag: 'v5' },
    );
    expect(state.escrowId).toBe('17');
    expect(state.balance).toBe(40_000n);
    expect(state.fees).toBe(10_000n);
    expect(state.phase).toBe(SessionPhase.Active);
    expect(state.hostStats).toHaveLength(16);
    expect(state.config).toMatchObject({
      tokenPrice: 1n,
      feePerNonce: 1_000n,
      voteThreshold: 8,
      sealGraceNonces: 20n,
      sealGraceSeconds: 3_600n,
      autoSealEveryNNonces: 150n,
      validationRate: 1_000,
      refusalTimeout: 60n,
      executionTimeout: 1_920n,
      maxTokensFloor: 64n,
    });
    expect(warnings).toEqual(['seal_grace_nonces_defaulted']);
  });

  it('keeps the row values when set', () => {
    const { config, warnings } = resolveSessionConfig(
      16,
      {
        tokenPrice: 5n,
        createDevshardFee: 7n,
        feePerNonce: 3n,
        inferenceSealGraceNonces: 160n,
        inferenceSealGraceSeconds: 10n,
        autoSealEveryNNonces: 30n,
        validationRate: 42,
        voteThresholdFactor: 67,
      },
      { refusalTimeout: 30n, executionTimeout: 600n },
    );
    expect(config).toMatchObject({
      tokenPrice: 5n,
      createDevshardFee: 7n,
      feePerNonce: 3n,
      sealGraceNonces: 160n,
      sealGraceSeconds: 10n,
      autoSealEveryNNonces: 30n,
      validationRate: 42,
      voteThreshold: 10,
      refusalTimeout: 30n,
      executionTimeout: 600n,
    });
    expect(warnings).toEqual([]);
    expect(resolveSessionConfig(40, {}).config.sealGraceNonces).toBe(40n);
  });

  it('derives vote_threshold from the factor', () => {
    expect(voteThresholdFor(16, 0)).toBe(8);
    expect(voteThresholdFor(16, 50)).toBe(8);
    expect(voteThresholdFor(16, 100)).toBe(16);
    expect(voteThresholdFor(5, 0)).toBe(2);
  });

  it('requires a canonical escrow id and a known tag', () => {
    expect(canonicalEscrowId(0n)).toBe('0');
    for (const bad of ['007', '-1', '1e3', '18446744073709551616', '']) {
      expect(() => canonicalEscrowId(bad)).toThrow(
        expect.objectContaining({ code: DevshardErrorCode.InvalidConfig }),
      );
    }
    expect(profileForTag('v5').name).toBe('v5');
    expect(profileForTag('v4.1').name).toBe('v4');
    expect(profileForTag('v3').name).toBe('v4');
    expect(() => profileForTag('v6')).toThrow();
    expect(() => profileForTag('v50')).toThrow();
  });
});
