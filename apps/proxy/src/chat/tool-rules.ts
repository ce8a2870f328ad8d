// Tools, tool choices and JSON schemas of a chat request (OpenAI's chat API reference: `tools`,
// `tool_choice`, `response_format`, the legacy `functions`/`function_call`; apps/proxy README
// "Request policy"). Function tools only: the hosts run open-weight models behind vLLM, which
// knows no custom tools or allowed-tools choices. A schema is bounded in depth, nodes and size,
// since a host compiles it into a grammar for every request that sends it.
import {
  expectArray,
  expectBoolean,
  expectObject,
  expectOneOf,
  expectString,
  type Json,
  onlyKeys,
  refuse,
} from './policy-values.js';

/** OpenAI's limit on `tools` (and on the legacy `functions`). */
export const MAX_TOOLS = 128;
/** Nesting of objects and arrays inside one JSON schema. */
export const MAX_SCHEMA_DEPTH = 32;
/** JSON values (objects, arrays, strings, numbers…) in one JSON schema. */
export const MAX_SCHEMA_NODES = 10_000;
/** Characters of one JSON schema, serialized. */
export const MAX_SCHEMA_CHARS = 64 * 1024;
/** OpenAI's rule for function and schema names. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const TOOL_KEYS = new Set(['type', 'function']);
const FUNCTION_KEYS = new Set(['name', 'description', 'parameters', 'strict']);
const LEGACY_FUNCTION_KEYS = new Set(['name', 'description', 'parameters']);
const TOOL_CALL_KEYS = new Set(['id', 'type', 'function', 'index']);
const JSON_SCHEMA_KEYS = new Set(['name', 'description', 'schema', 'strict']);

export function expectName(value: unknown, param: string): string {
  const name = expectString(value, param);
  if (!NAME.test(name)) {
    refuse(param, `Invalid '${param}': names are 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'.`);
  }
  return name;
}

/** `tools`: function tools only; returns their names. */
export function checkTools(value: unknown): Set<string> {
  const names = new Set<string>();
  expectArray(value, 'tools', MAX_TOOLS).forEach((t, i) => {
    const param = `tools[${i}]`;
    const tool = expectObject(t, param);
    expectOneOf(tool.type, `${param}.type`, ['function']);
    onlyKeys(tool, TOOL_KEYS, param);
    names.add(checkFunction(tool.function, `${param}.function`, FUNCTION_KEYS));
  });
  return names;
}

/** The legacy `functions`; returns their names. */
export function checkFunctions(value: unknown): Set<string> {
  const names = new Set<string>();
  expectArray(value, 'functions', MAX_TOOLS).forEach((f, i) => {
    names.add(checkFunction(f, `functions[${i}]`, LEGACY_FUNCTION_KEYS));
  });
  return names;
}

function checkFunction(value: unknown, param: string, keys: ReadonlySet<string>): string {
  const fn = expectObject(value, param);
  onlyKeys(fn, keys, param);
  const name = expectName(fn.name, `${param}.name`);
  if (fn.description !== undefined && fn.description !== null)
    expectString(fn.description, `${param}.description`);
  if (fn.parameters !== undefined && fn.parameters !== null)
    checkSchema(fn.parameters, `${param}.parameters`);
  if (fn.strict !== undefined && fn.strict !== null) expectBoolean(fn.strict, `${param}.strict`);
  return name;
}

/**
 * `tool_choice`: 'none' | 'auto' | 'required' | {type: 'function', function: {name}} naming one of
 * `tools`. Returns false when there are no tools to choose from (the choice is dropped).
 */
export function checkToolChoice(value: unknown, tools: ReadonlySet<string> | undefined): boolean {
  if (typeof value === 'string') {
    expectOneOf(value, 'tool_choice', ['none', 'auto', 'required']);
  } else {
    const choice = expectObject(value, 'tool_choice');
    expectOneOf(choice.type, 'tool_choice.type', ['function']);
    onlyKeys(choice, TOOL_KEYS, 'tool_choice');
    const fn = expectObject(choice.function, 'tool_choice.function');
    onlyKeys(fn, new Set(['name']), 'tool_choice.function');
    const name = expectName(fn.name, 'tool_choice.function.name');
    if (tools && tools.size > 0 && !tools.has(name)) {
      refuse('tool_choice.function.name', `Invalid 'tool_choice': no tool is named '${name}'.`);
    }
  }
  return tools !== undefined && tools.size > 0;
}

/** The legacy `function_call`: 'none' | 'auto' | {name}. False when there are no functions. */
export function checkFunctionCall(value: unknown, functions: ReadonlySet<string> | undefined): boolean {
  if (typeof value === 'string') {
    expectOneOf(value, 'function_call', ['none', 'auto']);
  } else {
    const call = expectObject(value, 'function_call');
    onlyKeys(call, new Set(['name']), 'function_call');
    const name = expectName(call.name, 'function_call.name');
    if (functions && functions.size > 0 && !functions.has(name)) {
      refuse('function_call.name', `Invalid 'function_call': no function is named '${name}'.`);
    }
  }
  return functions !== undefined && functions.size > 0;
}

/** An assistant message's `tool_calls`; returns their ids. */
export function checkToolCalls(value: unknown, param: string): string[] {
  return expectArray(value, param, MAX_TOOLS).map((c, i) => {
    const at = `${param}[${i}]`;
    const call = expectObject(c, at);
    onlyKeys(call, TOOL_CALL_KEYS, at);
    expectOneOf(call.type, `${at}.type`, ['function']);
    const id = expectString(call.id, `${at}.id`, 256);
    const fn = expectObject(call.function, `${at}.function`);
    onlyKeys(fn, new Set(['name', 'arguments']), `${at}.function`);
    expectString(fn.name, `${at}.function.name`, 64);
    expectString(fn.arguments, `${at}.function.arguments`);
    return id;
  });
}

/** `response_format`: text, json_object, or json_schema with a named, bounded schema. */
export function checkResponseFormat(value: unknown): void {
  const format = expectObject(value, 'response_format');
  const type = expectOneOf(format.type, 'response_format.type', ['text', 'json_object', 'json_schema']);
  if (type !== 'json_schema') {
    onlyKeys(format, new Set(['type']), 'response_format');
    return;
  }
  onlyKeys(format, new Set(['type', 'json_schema']), 'response_format');
  const spec = expectObject(format.json_schema, 'response_format.json_schema');
  onlyKeys(spec, JSON_SCHEMA_KEYS, 'response_format.json_schema');
  expectName(spec.name, 'response_format.json_schema.name');
  if (spec.description !== undefined && spec.description !== null) {
    expectString(spec.description, 'response_format.json_schema.description');
  }
  if (spec.schema !== undefined && spec.schema !== null)
    checkSchema(spec.schema, 'response_format.json_schema.schema');
  if (spec.strict !== undefined && spec.strict !== null)
    expectBoolean(spec.strict, 'response_format.json_schema.strict');
}

/** A JSON schema: an object within the depth, node and size limits (its meaning is the host's). */
export function checkSchema(value: unknown, param: string): void {
  const schema = expectObject(value, param);
  let nodes = 0;
  const walk = (v: unknown, depth: number): void => {
    if (++nodes > MAX_SCHEMA_NODES) {
      refuse(param, `Invalid '${param}': the schema has more than ${MAX_SCHEMA_NODES} values.`);
    }
    if (typeof v !== 'object' || v === null) return;
    if (depth > MAX_SCHEMA_DEPTH) {
      refuse(param, `Invalid '${param}': the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels.`);
    }
    for (const child of Array.isArray(v) ? v : Object.values(v as Json)) walk(child, depth + 1);
  };
  walk(schema, 1);
  if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS) {
    refuse(param, `Invalid '${param}': the schema is longer than ${MAX_SCHEMA_CHARS} characters.`);
  }
}
