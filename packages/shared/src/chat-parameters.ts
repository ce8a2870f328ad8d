// The names of top-level chat parameters as the request policy sees them (apps/proxy README "Request
// policy"), for the checks that cannot import the proxy: GATEWAY_PASSTHROUGH_PARAMETERS
// (config/parsers.ts) and settings.passthrough_parameters (the controller's settings route, an
// extension of spec §2.4). A pass-through name is spelled as OpenAI's and vLLM's parameters are.

/** A parameter name: a-z, 0-9 and _, starting with a letter, at most 64 characters. */
export const PARAMETER_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Most names one pass-through list may hold (the environment's, and the settings' apart). */
export const MAX_PASSTHROUGH_PARAMETERS = 64;

/** Always passed through with no rule of the gateway: vLLM's chat template options (e.g. enable_thinking). */
export const DEFAULT_PASSTHROUGH: readonly string[] = ['chat_template_kwargs'];

/**
 * The parameters the proxy has a rule for (apps/proxy/src/chat/request-policy.ts RULES; its test
 * keeps the two lists equal). Listing one as passed through changes nothing: its rule still applies.
 */
export const RULED_CHAT_PARAMETERS: readonly string[] = [
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'stream',
  'stream_options',
  'n',
  'temperature',
  'top_p',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'stop',
  'seed',
  'user',
  'metadata',
  'store',
  'reasoning_effort',
  'verbosity',
  'modalities',
  'audio',
  'prediction',
  'service_tier',
  'prompt_cache_key',
  'safety_identifier',
  'web_search_options',
  'response_format',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'top_k',
  'min_p',
  'repetition_penalty',
];
