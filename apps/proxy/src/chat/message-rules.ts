// The messages of a chat request (OpenAI's chat API reference, "messages"; apps/proxy README
// "Request policy"): a bounded, non-empty list; each role with the fields it may carry; `content` a
// string or a list of parts. The network's hosts take text parts only (chain-and-network.md §4.6),
// so image, audio and file parts are refused here, naming the model, rather than by a host after a
// nonce was spent. A `tool` message must answer a tool call of an earlier assistant message.
import {
  expectArray,
  expectObject,
  expectOneOf,
  expectString,
  type Json,
  onlyKeys,
  refuse,
  wrongType,
} from './policy-values.js';
import { checkToolCalls } from './tool-rules.js';

export const MAX_MESSAGES = 2_048;

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;
type Role = (typeof ROLES)[number];

const FIELDS: Record<Role, ReadonlySet<string>> = {
  system: new Set(['role', 'content', 'name']),
  developer: new Set(['role', 'content', 'name']),
  user: new Set(['role', 'content', 'name']),
  // reasoning_content: the reasoning a host returned (vLLM's reasoning parsers), sent back by
  // clients that keep it in the conversation.
  assistant: new Set([
    'role',
    'content',
    'name',
    'tool_calls',
    'function_call',
    'refusal',
    'audio',
    'reasoning_content',
  ]),
  tool: new Set(['role', 'content', 'tool_call_id']),
  function: new Set(['role', 'content', 'name']),
};

/** Part types OpenAI lets a role send; all but `text` are refused (text-only hosts, §4.6). */
const PART_TYPES: Record<Role, readonly string[]> = {
  system: ['text'],
  developer: ['text'],
  user: ['text', 'image_url', 'input_audio', 'file'],
  assistant: ['text', 'refusal'],
  tool: ['text'],
  function: ['text'],
};
const TEXT_PART = new Set(['type', 'text']);

export interface MessageFindings {
  /** Messages whose `content` is null or absent: the host is sent "" (§4.6: a string or parts). */
  readonly emptyContent: number[];
}

export function checkMessages(value: unknown, model: string): MessageFindings {
  const messages = expectArray(value, 'messages', MAX_MESSAGES, 1);
  const findings: MessageFindings = { emptyContent: [] };
  const toolCallIds = new Set<string>();
  messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    const message = expectObject(m, param);
    const role = expectOneOf(message.role, `${param}.role`, ROLES);
    onlyKeys(message, FIELDS[role], param);
    if (message.name !== undefined) expectString(message.name, `${param}.name`, 256);
    if (role === 'assistant') {
      checkAssistant(message, param, model, toolCallIds);
      if (message.content === null || message.content === undefined) findings.emptyContent.push(i);
      return;
    }
    if (role === 'function') {
      expectString(message.name, `${param}.name`, 256);
      if (message.content === null) {
        findings.emptyContent.push(i);
        return;
      }
    }
    if (role === 'tool') {
      const id = expectString(message.tool_call_id, `${param}.tool_call_id`, 256);
      if (!toolCallIds.has(id)) {
        refuse(
          `${param}.tool_call_id`,
          `Invalid '${param}': a 'tool' message must answer a tool call of an earlier assistant message; no tool call has the id '${id.slice(0, 64)}'.`,
        );
      }
    }
    checkContent(message.content, `${param}.content`, role, model);
  });
  return findings;
}

function checkAssistant(message: Json, param: string, model: string, toolCallIds: Set<string>): void {
  if (message.content !== null && message.content !== undefined) {
    checkContent(message.content, `${param}.content`, 'assistant', model);
  }
  if (message.refusal !== undefined && message.refusal !== null)
    expectString(message.refusal, `${param}.refusal`);
  if (message.reasoning_content !== undefined && message.reasoning_content !== null) {
    expectString(message.reasoning_content, `${param}.reasoning_content`);
  }
  if (message.audio !== undefined && message.audio !== null) {
    refuse(`${param}.audio`, `Invalid '${param}.audio': audio is not supported by the network's models.`);
  }
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    for (const id of checkToolCalls(message.tool_calls, `${param}.tool_calls`)) toolCallIds.add(id);
  }
  if (message.function_call !== undefined && message.function_call !== null) {
    const call = expectObject(message.function_call, `${param}.function_call`);
    onlyKeys(call, new Set(['name', 'arguments']), `${param}.function_call`);
    expectString(call.name, `${param}.function_call.name`, 64);
    expectString(call.arguments, `${param}.function_call.arguments`);
  }
}

function checkContent(content: unknown, param: string, role: Role, model: string): void {
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) wrongType(param, 'a string or an array of content parts', content);
  // An empty list says nothing; an assistant turn that only called tools may send one.
  expectArray(content, param, MAX_MESSAGES * 8, role === 'assistant' ? 0 : 1);
  content.forEach((p, j) => {
    const at = `${param}[${j}]`;
    const part = expectObject(p, at);
    const type = expectOneOf(part.type, `${at}.type`, PART_TYPES[role]);
    if (type !== 'text') {
      refuse(
        `${at}.type`,
        `Invalid '${at}': ${type} parts are not supported by model ${model}: the network's hosts take text parts only.`,
      );
    }
    onlyKeys(part, TEXT_PART, at);
    expectString(part.text, `${at}.text`);
  });
}
