// The request policy of the chat routes (apps/proxy README "Request policy", architecture §5 "body
// limits and JSON validation"): every parameter of a chat request is known and checked before
// admission, so a request a host would refuse costs nothing — no nonce, no reservation, no Redis
// write. Each rule follows OpenAI's chat API reference; a refusal is a 400 naming the parameter
// (OpenAI answers out-of-range values so; the hosts' engines would clamp some silently). Known
// parameters pass to the host as the client sent them; a few normalisations (findings below) make
// the host's bytes differ. Parameters the gateway has no rule for are refused unless listed as
// passed through: DEFAULT_PASSTHROUGH, plus the operator's GATEWAY_PASSTHROUGH_PARAMETERS and
// settings.passthrough_parameters (gate/settings.ts holds their union).
import { DEFAULT_PASSTHROUGH, GatewayError } from '@gonka-gateway/shared';
import { checkMessages } from './message-rules.js';
import {
  expectArray,
  expectBoolean,
  expectInteger,
  expectNumber,
  expectObject,
  expectOneOf,
  expectString,
  isObject,
  type Json,
  onlyKeys,
  refuse,
  refuseUnknown,
} from './policy-values.js';
import {
  checkFunctionCall,
  checkFunctions,
  checkResponseFormat,
  checkToolChoice,
  checkTools,
} from './tool-rules.js';

/** OpenAI's limits. */
export const MAX_STOP = 4;
export const MAX_LOGIT_BIAS = 300;
export const MAX_TOP_LOGPROBS = 20;
const MAX_METADATA = 16;
const INT64 = 2 ** 63;

export interface PolicyOptions {
  /** Top-level parameters passed through without a rule, besides DEFAULT_PASSTHROUGH (packages/shared). */
  readonly passthrough?: ReadonlySet<string>;
}

/** What the client asked of the answer (response hygiene, response-hygiene.ts). */
export interface ResponseAsk {
  readonly logprobs: boolean;
  readonly topLogprobs: number;
  /** A streamed client asked for the usage chunk (stream_options.include_usage). */
  readonly includeUsage: boolean;
}

export interface PolicyFindings {
  /** Top-level parameters the host is not sent: a tool choice with no tools to choose from. */
  readonly drop: readonly string[];
  /** Messages whose null or absent `content` the host is sent as "" (message-rules.ts). */
  readonly emptyContent: readonly number[];
  readonly ask: ResponseAsk;
}

type Rule = (value: unknown, param: string) => void;

const nullable =
  (rule: Rule): Rule =>
  (value, param) => {
    if (value !== null) rule(value, param);
  };
const integerFrom = (min: number) => nullable((v, p) => expectInteger(v, p, { min }));
const numberIn = (min: number, max: number, minExclusive = false) =>
  nullable((v, p) => expectNumber(v, p, { min, max, minExclusive }));
const boolean = nullable((v, p) => expectBoolean(v, p));
const string = (maxLength: number) => nullable((v, p) => expectString(v, p, maxLength));
const oneOf = (values: readonly string[]) => nullable((v, p) => expectOneOf(v, p, values));
const unsupported =
  (why: string): Rule =>
  (value, param) => {
    if (value !== null) refuse(param, `'${param}' is not supported: ${why}.`);
  };
const checkedElsewhere: Rule = () => undefined;

/** Every top-level parameter the gateway knows, with its rule. */
const RULES = new Map<string, Rule>([
  ['model', checkModel],
  ['messages', checkedElsewhere],
  ['max_tokens', integerFrom(1)],
  ['max_completion_tokens', integerFrom(1)],
  ['stream', boolean],
  ['stream_options', nullable(checkStreamOptions)],
  ['n', nullable(checkN)],
  ['temperature', numberIn(0, 2)],
  ['top_p', numberIn(0, 1, true)],
  ['frequency_penalty', numberIn(-2, 2)],
  ['presence_penalty', numberIn(-2, 2)],
  ['logit_bias', nullable(checkLogitBias)],
  ['logprobs', boolean],
  ['top_logprobs', nullable((v, p) => expectInteger(v, p, { min: 0, max: MAX_TOP_LOGPROBS }))],
  ['stop', nullable(checkStop)],
  ['seed', nullable(checkSeed)],
  ['user', string(256)],
  ['metadata', nullable(checkMetadata)],
  ['store', boolean],
  ['reasoning_effort', oneOf(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'])],
  ['verbosity', oneOf(['low', 'medium', 'high'])],
  ['modalities', nullable(checkModalities)],
  ['audio', unsupported("the network's models answer in text only")],
  ['prediction', nullable(checkPrediction)],
  ['service_tier', oneOf(['auto', 'default', 'flex', 'scale', 'priority'])],
  ['prompt_cache_key', string(256)],
  ['safety_identifier', string(256)],
  ['web_search_options', unsupported("the network's models do not search the web")],
  ['response_format', nullable((v) => checkResponseFormat(v))],
  ['tools', checkedElsewhere],
  ['tool_choice', checkedElsewhere],
  ['parallel_tool_calls', boolean],
  ['functions', checkedElsewhere],
  ['function_call', checkedElsewhere],
  // vLLM's sampling parameters the hosts' engines take beside OpenAI's.
  ['top_k', nullable((v, p) => expectInteger(v, p, { min: -1 }))],
  ['min_p', numberIn(0, 1)],
  ['repetition_penalty', numberIn(0, 2, true)],
]);

/**
 * The names of the known parameters. The controller refuses them in settings.passthrough_parameters
 * by packages/shared's RULED_CHAT_PARAMETERS, which request-policy.test.ts keeps equal to this.
 */
export const KNOWN_PARAMETERS: ReadonlySet<string> = new Set(RULES.keys());

/**
 * Checks a parsed chat body against every rule; throws a GatewayError (400, naming the parameter)
 * at the first one it breaks, else returns what the later stages need to know.
 */
export function checkChatRequest(value: unknown, options: PolicyOptions = {}): PolicyFindings {
  if (!isObject(value)) {
    throw new GatewayError('invalid_request', 'the request body must be a JSON object');
  }
  const body = value;
  for (const key in body) {
    const rule = RULES.get(key);
    if (rule) rule(body[key], key);
    else if (!DEFAULT_PASSTHROUGH.includes(key) && !options.passthrough?.has(key)) refuseUnknown(key);
  }
  if (body.model === undefined) missing('model');
  if (body.messages === undefined) missing('messages');
  const { emptyContent } = checkMessages(body.messages, body.model as string);
  checkTokens(body);
  if (isSet(body.top_logprobs) && body.logprobs !== true) {
    refuse(
      'top_logprobs',
      "Invalid 'top_logprobs': 'logprobs' must be true to ask for top log probabilities.",
    );
  }
  const drop: string[] = [];
  const tools = isSet(body.tools) ? checkTools(body.tools) : undefined;
  if (isSet(body.tool_choice) && !checkToolChoice(body.tool_choice, tools)) drop.push('tool_choice');
  const functions = isSet(body.functions) ? checkFunctions(body.functions) : undefined;
  if (isSet(body.function_call) && !checkFunctionCall(body.function_call, functions))
    drop.push('function_call');
  const streamOptions = body.stream_options as Json | null | undefined;
  return {
    drop,
    emptyContent,
    ask: {
      logprobs: body.logprobs === true,
      topLogprobs: (body.top_logprobs as number | null | undefined) ?? 0,
      includeUsage: body.stream === true && streamOptions?.include_usage === true,
    },
  };
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

function missing(param: string): never {
  return refuse(param, `Missing required parameter: '${param}'.`);
}

/** Both spellings of the token limit may be sent, but not with two different values. */
function checkTokens(body: Json): void {
  const a = body.max_tokens;
  const b = body.max_completion_tokens;
  if (isSet(a) && isSet(b) && a !== b) {
    refuse(
      'max_completion_tokens',
      `'max_tokens' (${a}) and 'max_completion_tokens' (${b}) differ: send one of them, or the same value in both.`,
    );
  }
}

function checkModel(value: unknown, param: string): void {
  if (expectString(value, param, 256) === '') refuse(param, `Invalid '${param}': empty string.`);
}

function checkN(value: unknown, param: string): void {
  if (expectInteger(value, param, { min: 1 }) > 1)
    refuse(param, 'n > 1 is not supported: one choice per request');
}

function checkStreamOptions(value: unknown, param: string): void {
  const options = expectObject(value, param);
  onlyKeys(options, new Set(['include_usage', 'include_obfuscation']), param);
  for (const key of ['include_usage', 'include_obfuscation']) {
    if (isSet(options[key])) expectBoolean(options[key], `${param}.${key}`);
  }
}

function checkLogitBias(value: unknown, param: string): void {
  const bias = expectObject(value, param);
  const entries = Object.entries(bias);
  if (entries.length > MAX_LOGIT_BIAS) {
    refuse(
      param,
      `Invalid '${param}': at most ${MAX_LOGIT_BIAS} tokens may be biased, got ${entries.length}.`,
    );
  }
  for (const [token, v] of entries) {
    if (!/^\d{1,10}$/.test(token)) {
      refuse(
        param,
        `Invalid '${param}': keys are token ids (decimal integers), got '${token.slice(0, 32)}'.`,
      );
    }
    expectNumber(v, `${param}.${token}`, { min: -100, max: 100 });
  }
}

function checkStop(value: unknown, param: string): void {
  if (typeof value === 'string') return;
  expectArray(value, param, MAX_STOP).forEach((s, i) => {
    expectString(s, `${param}[${i}]`);
  });
}

/** An integer a host's int64 holds. */
function checkSeed(value: unknown, param: string): void {
  const seed = expectInteger(value, param);
  if (seed < -INT64 || seed >= INT64) refuse(param, `Invalid '${param}': expected a 64-bit integer.`);
}

function checkMetadata(value: unknown, param: string): void {
  const metadata = expectObject(value, param);
  const entries = Object.entries(metadata);
  if (entries.length > MAX_METADATA) refuse(param, `Invalid '${param}': at most ${MAX_METADATA} pairs.`);
  for (const [key, v] of entries) {
    if (key.length > 64) refuse(param, `Invalid '${param}': keys are at most 64 characters.`);
    expectString(v, `${param}.${key}`, 512);
  }
}

function checkModalities(value: unknown, param: string): void {
  expectArray(value, param, 2).forEach((m, i) => {
    if (expectOneOf(m, `${param}[${i}]`, ['text', 'audio']) === 'audio') {
      refuse(`${param}[${i}]`, "Invalid 'modalities': the network's models answer in text only.");
    }
  });
}

function checkPrediction(value: unknown, param: string): void {
  const prediction = expectObject(value, param);
  onlyKeys(prediction, new Set(['type', 'content']), param);
  expectOneOf(prediction.type, `${param}.type`, ['content']);
  const content = prediction.content;
  if (typeof content === 'string') return;
  expectArray(content, `${param}.content`, 1_024, 1).forEach((p, i) => {
    const part = expectObject(p, `${param}.content[${i}]`);
    onlyKeys(part, new Set(['type', 'text']), `${param}.content[${i}]`);
    expectOneOf(part.type, `${param}.content[${i}].type`, ['text']);
    expectString(part.text, `${param}.content[${i}].text`);
  });
}
