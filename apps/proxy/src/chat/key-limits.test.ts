// The pure half of a stored key's rules (key-limits.ts): expiry and models, the budget reservation
// and its period, and the OpenAI error shapes and x-ratelimit-* headers of a refusal.
import { describe, expect, it } from 'vitest';
import type { StoredKey } from '../gate/key-directory.js';
import { checkStoredKey, keyAdmissionOf, rateLimitHeaders, refusalOfLimit, resetText } from './key-limits.js';

const key = (over: Partial<StoredKey> = {}): StoredKey => ({
  id: '3',
  hash: Buffer.alloc(32),
  models: null,
  budget: null,
  period: 'total',
  rpm: 0,
  tpm: 0,
  maxConcurrent: 0,
  expiresAtMs: null,
  ledgerSpend: 0n,
  ...over,
});

describe('a stored key on one request', () => {
  it('refuses an expired key and a model outside its list, nothing else', () => {
    expect(checkStoredKey(key({ expiresAtMs: 1_000 }), 'm', 1_000)).toBe('expired');
    expect(checkStoredKey(key({ expiresAtMs: 1_001 }), 'm', 1_000)).toBeUndefined();
    expect(checkStoredKey(key({ models: new Set(['a']) }), 'b', 0)).toBe('model');
    expect(checkStoredKey(key({ models: new Set(['a']) }), 'a', 0)).toBeUndefined();
  });

  it('prices the budget reservation at (input + max_tokens) × the token price in the current period', () => {
    const now = new Date('2026-11-24T23:00:00Z');
    const a = keyAdmissionOf(
      key({ budget: 1_000n, period: 'daily', ledgerSpend: 7n, tpm: 500 }),
      { inputTokens: 10, maxTokens: 54, tokenPrice: 3n },
      now,
    );
    expect(a).toMatchObject({ keyId: '3', tpm: 500, tpmCharge: 64 });
    expect(a.budget).toEqual({
      limit: 1_000n,
      reservation: 192n,
      periodTag: 'd2026-11-24',
      seed: 7n,
      ttlSeconds: 3_600 + 86_400,
    });
    expect(
      keyAdmissionOf(key(), { inputTokens: 1, maxTokens: 1, tokenPrice: 1n }, now).budget,
    ).toBeUndefined();
  });

  it("answers in OpenAI's shapes and header names", () => {
    expect([resetText(250), resetText(1_000), resetText(59_001), resetText(360_000)]).toEqual([
      '250ms',
      '1s',
      '1m0s',
      '6m0s',
    ]);
    const rpm = refusalOfLimit(key({ rpm: 4 }), 'rpm', 12_300);
    expect(rpm.error.toBody().error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(rpm.error.status).toBe(429);
    expect(rpm.headers).toEqual({
      'retry-after': '13',
      'x-ratelimit-limit-requests': '4',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '13s',
    });
    const budget = refusalOfLimit(key({ budget: 9n }), 'budget', -1);
    expect(budget.error.toBody().error).toMatchObject({
      code: 'insufficient_quota',
      type: 'insufficient_quota',
    });
    expect(budget.headers).toEqual({ 'x-should-retry': 'false' });
    expect(refusalOfLimit(key({ tpm: 10 }), 'tpm', -1).headers['x-should-retry']).toBe('false');
    expect(
      rateLimitHeaders(key({ tpm: 100 }), {
        requestsLeft: -1,
        requestsResetMs: -1,
        tokensLeft: 40,
        tokensResetMs: 500,
      }),
    ).toEqual({
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '40',
      'x-ratelimit-reset-tokens': '500ms',
    });
  });
});
