// Parse and policy stages of a chat request (architecture §5), after gate/ authenticated the caller:
// the request policy (request-policy.ts: every parameter, message and limit, apps/proxy README
// "Request policy"), the caller's access to the model (spec §3.2, §5.1.3), a stored
// key's expiry and models, the model or escrow this replica can route, max_tokens default and cap
// (spec §2.4, §8), the exact bytes the host runs and the reservation. Everything here is decided
// before admission: a refusal spends nothing.
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyRequest } from 'fastify';
import type { StoredKey } from '../gate/key-directory.js';
import type { GatewaySettings } from '../gate/settings.js';
import type { KeyAdmission } from './admission.js';
import { estimateInputTokens } from './admission.js';
import { bodyForHost, checkAccess, decideMaxTokens } from './chat-policy.js';
import type { ChatBody } from './chat-schema.js';
import { checkStoredKey, keyAdmissionOf, refusalOfCheck } from './key-limits.js';
import { checkChatRequest, type ResponseAsk } from './request-policy.js';

export interface ChatPlan {
  readonly body: ChatBody;
  readonly model: string;
  /** POST /devshard/{id}/v1/chat/completions: only this escrow. */
  readonly escrowId: bigint | undefined;
  readonly stream: boolean;
  readonly stored: StoredKey | undefined;
  /** The client's bytes, as a forward to the owner replica sends them. */
  readonly clientBody: Buffer;
  /** The exact bytes the host runs (chat-policy.ts bodyForHost). */
  readonly hostBody: Buffer;
  readonly inputTokens: number;
  readonly maxTokens: number;
  readonly keyLimits: KeyAdmission | undefined;
  /** Response headers every answer of this request carries (a capped max_tokens). */
  readonly headers: Record<string, string>;
  /** What the client asked of the answer: the rest of what a host adds is removed (response-hygiene.ts). */
  readonly ask: ResponseAsk;
}

export interface PlanDeps {
  readonly settings: { readonly current: GatewaySettings };
  readonly tokenPrice: (model: string) => bigint | undefined;
  /** Models this replica's pool snapshot or owned sessions know. */
  readonly routable: (model: string) => boolean;
  /** Models the fleet serves according to Postgres (may be absent from Redis a moment). */
  readonly fleetServes: (model: string) => boolean;
  /** The model an escrow serves, if this replica knows the escrow. */
  readonly escrowModel: (escrowId: bigint) => string | undefined;
  readonly onKeyRejection: (reason: string) => void;
}

export function planChat(deps: PlanDeps, request: FastifyRequest, escrowId: bigint | undefined): ChatPlan {
  // One copy of the settings for the whole plan: the pass-through list the policy applies is the
  // environment's plus the settings' at the revision this request reads (gate/settings.ts).
  const settings = deps.settings.current;
  // First: a malformed request is refused before anything about the caller or the model is read.
  const findings = checkChatRequest(request.body, { passthrough: settings.passthrough });
  const body = request.body as ChatBody;
  checkAccess(request.caller, body.model, settings);
  const stored = request.caller.kind === 'user' ? request.caller.stored : undefined;
  if (stored) {
    const refused = checkStoredKey(stored, body.model, Date.now());
    if (refused) {
      deps.onKeyRejection(refused);
      throw refusalOfCheck(refused, body.model);
    }
  }
  checkRoutable(deps, body.model, escrowId);
  const decision = decideMaxTokens(body, settings);
  const headers: Record<string, string> = {};
  if (decision.capped) headers['x-max-tokens-capped'] = String(decision.maxTokens);
  const raw = request.rawBody ?? Buffer.from(JSON.stringify(body));
  const inputTokens = estimateInputTokens(raw.length);
  return {
    body,
    model: body.model,
    escrowId,
    stream: body.stream === true,
    stored,
    clientBody: raw,
    hostBody: bodyForHost(raw, body, decision, findings),
    inputTokens,
    maxTokens: decision.maxTokens,
    keyLimits: stored
      ? keyAdmissionOf(
          stored,
          { inputTokens, maxTokens: decision.maxTokens, tokenPrice: deps.tokenPrice(body.model) },
          new Date(),
        )
      : undefined,
    headers,
    ask: findings.ask,
  };
}

/**
 * A model nobody serves is 404; a model the fleet serves that this replica cannot route yet (its
 * pool snapshot is being rebuilt after a Redis loss, a replica that just started) is a retryable 503,
 * never a 404 an OpenAI client would not retry.
 */
function checkRoutable(deps: PlanDeps, model: string, escrowId: bigint | undefined): void {
  if (escrowId === undefined) {
    if (deps.routable(model)) return;
    if (deps.fleetServes(model)) {
      throw new GatewayError('no_escrow_available', `no escrow can serve model ${model} on this replica yet`);
    }
    throw new GatewayError('model_not_found', `The model \`${model}\` does not exist`, { param: 'model' });
  }
  const served = deps.escrowModel(escrowId);
  if (served === undefined) throw new GatewayError('escrow_not_found', `no escrow ${escrowId}`);
  if (served !== model) {
    throw new GatewayError('invalid_request', `escrow ${escrowId} serves ${served}`, { param: 'model' });
  }
}
