// Per-request rules from the admin settings (spec §2.4, §3.2, §5.1.3): which callers may use a model
// and how many tokens a request may ask for. Pure functions over the current settings.
import { GatewayError } from '@gonka-gateway/shared';
import type { Caller } from '../gate/auth.js';
import type { GatewaySettings } from '../gate/settings.js';
import type { ChatBody } from './chat-schema.js';
import type { PolicyFindings } from './request-policy.js';

/** 401 for a missing or wrong key, and for a user key on an admin_only model (spec §7). */
export function checkKey(caller: Caller): void {
  if (caller.kind === 'anonymous') throw new GatewayError('missing_api_key', 'an API key is required');
  if (caller.kind === 'invalid') throw new GatewayError('invalid_api_key', 'the API key is not valid');
}

export function checkAccess(caller: Caller, model: string, settings: GatewaySettings): void {
  checkKey(caller);
  if (caller.kind === 'admin') return;
  if ((settings.access.get(model) ?? 'admin_only') === 'admin_only') {
    throw new GatewayError('admin_key_required', `an admin API key is required for model ${model}`);
  }
}

export interface MaxTokensDecision {
  readonly maxTokens: number;
  /** The client asked for more than the cap (said in a response header). */
  readonly capped: boolean;
  /** The body has to carry a different max_tokens than the client sent. */
  readonly rewrite: boolean;
}

/**
 * The default when absent, the cap when above it (spec §2.4, §8), for whichever of max_tokens and
 * max_completion_tokens is sent (the request policy refused two different values).
 */
export function decideMaxTokens(body: ChatBody, settings: GatewaySettings): MaxTokensDecision {
  const asked = body.max_tokens ?? body.max_completion_tokens ?? undefined;
  if (asked === undefined) return { maxTokens: settings.defaultMaxTokens, capped: false, rewrite: true };
  if (asked > settings.maxTokensCap) return { maxTokens: settings.maxTokensCap, capped: true, rewrite: true };
  return { maxTokens: asked, capped: false, rewrite: false };
}

/**
 * The exact bytes the host runs: the client's bytes unless max_tokens had to change, the client did
 * not ask for a stream, or the request policy normalised something (a tool choice without tools is
 * dropped; a null message content is sent as "", the only form the hosts take, chain-and-network.md
 * §4.6). Hosts always stream (with usage in the last chunk): the serve stage's first-token and
 * stall deadlines need to see an answer start, and a non-streamed client's completion is assembled
 * from the chunks (completion.ts).
 */
export function bodyForHost(
  raw: Buffer,
  body: ChatBody,
  decision: MaxTokensDecision,
  findings: Pick<PolicyFindings, 'drop' | 'emptyContent'>,
): Buffer {
  const streamed = body.stream === true;
  const normalised = findings.drop.length > 0 || findings.emptyContent.length > 0;
  if (!decision.rewrite && streamed && !normalised) return raw;
  const next: Record<string, unknown> = { ...body };
  if (decision.rewrite) {
    next.max_tokens = decision.maxTokens;
    if (next.max_completion_tokens !== undefined && next.max_completion_tokens !== null) {
      next.max_completion_tokens = decision.maxTokens;
    }
  }
  for (const key of findings.drop) delete next[key];
  if (findings.emptyContent.length > 0) {
    const messages = [...body.messages] as Record<string, unknown>[];
    for (const i of findings.emptyContent) messages[i] = { ...messages[i], content: '' };
    next.messages = messages;
  }
  if (!streamed) {
    next.stream = true;
    next.stream_options = { include_usage: true };
  }
  return Buffer.from(JSON.stringify(next));
}
