// A stored API key's own rules for one chat request (docs/keys-and-usage.md): expiry and allowed
// models are checked here from the replica's copy of the key (current within a second of a change,
// gate/settings.ts); rpm, tpm, concurrency and budget are decided fleet-wide by the admission
// script (admission.ts) from what keyAdmissionOf builds. Refusals use OpenAI's shapes: 401 for an
// expired key, 403 for a model the key may not use, 429 `rate_limit_exceeded` with Retry-After and
// the x-ratelimit-* headers, 429 `insufficient_quota`.
import { budgetPeriodOf, GatewayError } from '@gonka-gateway/shared';
import type { StoredKey } from '../gate/key-directory.js';
import type { KeyAdmission, KeyRejection, RateLimitState } from './admission.js';

/** Every reason the key_rejections_total metric counts (a bounded label set). */
export type KeyRejectionReason = 'expired' | 'model' | KeyRejection;

export function checkStoredKey(
  key: StoredKey,
  model: string,
  nowMs: number,
): 'expired' | 'model' | undefined {
  if (key.expiresAtMs !== null && key.expiresAtMs <= nowMs) return 'expired';
  if (key.models !== null && !key.models.has(model)) return 'model';
  return undefined;
}

export function refusalOfCheck(reason: 'expired' | 'model', model: string): GatewayError {
  return reason === 'expired'
    ? new GatewayError('invalid_api_key', 'the API key has expired')
    : new GatewayError('model_not_allowed', `this API key may not use model ${model}`, { param: 'model' });
}

const DAY_S = 86_400;

export function keyAdmissionOf(
  key: StoredKey,
  request: { inputTokens: number; maxTokens: number; tokenPrice: bigint | undefined },
  now: Date,
): KeyAdmission {
  const tpmCharge = request.inputTokens + request.maxTokens;
  const base = { keyId: key.id, rpm: key.rpm, tpm: key.tpm, tpmCharge, maxConcurrent: key.maxConcurrent };
  if (key.budget === null) return base;
  const window = budgetPeriodOf(key.period, now);
  return {
    ...base,
    budget: {
      limit: key.budget,
      reservation: BigInt(tpmCharge) * (request.tokenPrice ?? 0n),
      periodTag: window.tag,
      seed: key.ledgerSpend,
      ttlSeconds: window.end === null ? 0 : Math.ceil((window.end.getTime() - now.getTime()) / 1000) + DAY_S,
    },
  };
}

/** OpenAI's reset format: "1s", "6m0s", "250ms". */
export function resetText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

/** x-ratelimit-* headers (OpenAI's names) for the limits the key has. */
export function rateLimitHeaders(key: StoredKey, rate: RateLimitState | undefined): Record<string, string> {
  const h: Record<string, string> = {};
  if (!rate) return h;
  if (key.rpm > 0) {
    h['x-ratelimit-limit-requests'] = String(key.rpm);
    h['x-ratelimit-remaining-requests'] = String(Math.max(0, rate.requestsLeft));
    h['x-ratelimit-reset-requests'] = resetText(rate.requestsResetMs);
  }
  if (key.tpm > 0) {
    h['x-ratelimit-limit-tokens'] = String(key.tpm);
    h['x-ratelimit-remaining-tokens'] = String(Math.max(0, rate.tokensLeft));
    h['x-ratelimit-reset-tokens'] = resetText(rate.tokensResetMs);
  }
  return h;
}

/** The 429 of a key limit, with its headers. */
export function refusalOfLimit(
  key: StoredKey,
  reason: KeyRejection,
  retryAfterMs: number,
): { error: GatewayError; headers: Record<string, string> } {
  if (reason === 'budget') {
    return {
      error: new GatewayError(
        'insufficient_quota',
        `this API key's ${key.period} budget of ${key.budget} ngonka would be exceeded by this request`,
      ),
      headers: { 'x-should-retry': 'false' },
    };
  }
  if (reason === 'key_concurrency') {
    return {
      error: new GatewayError(
        'rate_limit_exceeded',
        `this API key already has ${key.maxConcurrent} requests in flight`,
      ),
      headers: { 'retry-after': '1' },
    };
  }
  const retryS = retryAfterMs < 0 ? 60 : Math.max(1, Math.ceil(retryAfterMs / 1000));
  const headers: Record<string, string> = { 'retry-after': String(retryS) };
  if (reason === 'rpm') {
    headers['x-ratelimit-limit-requests'] = String(key.rpm);
    headers['x-ratelimit-remaining-requests'] = '0';
    headers['x-ratelimit-reset-requests'] = resetText(retryAfterMs);
    return {
      error: new GatewayError(
        'rate_limit_exceeded',
        `rate limit reached: ${key.rpm} requests per minute for this API key`,
      ),
      headers,
    };
  }
  headers['x-ratelimit-limit-tokens'] = String(key.tpm);
  headers['x-ratelimit-remaining-tokens'] = '0';
  if (retryAfterMs >= 0) headers['x-ratelimit-reset-tokens'] = resetText(retryAfterMs);
  else headers['x-should-retry'] = 'false';
  return {
    error: new GatewayError(
      'rate_limit_exceeded',
      retryAfterMs < 0
        ? `this request (input estimate + max_tokens) is larger than the key's ${key.tpm} tokens per minute`
        : `rate limit reached: ${key.tpm} tokens per minute for this API key`,
    ),
    headers,
  };
}
