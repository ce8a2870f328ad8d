// The gateway's own HTTP API as gwctl calls it (spec §4): {gateway_url} from --gateway-url, then
// GATEWAY_URL, then the local default 127.0.0.1:18080 (spec §2.10); keys only from environment
// variables (admin: DEVSHARD_ADMIN_API_KEY; user: the first of DEVSHARD_API_KEYS), never from the
// command line, like private keys (argv-guard.ts). Error bodies are the gateway's OpenAI-shaped
// errors; the message is shown, the key never.
import type { Command } from 'commander';
import { CliFailure, type CliIo, UsageError } from './cli-io.js';

/** The model `gwctl admin` and `gwctl chat` use unless --model names another (the devnet's default). */
export const DEFAULT_MODEL = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:18080';

export interface GatewayOptions {
  gatewayUrl?: string;
  adminKeyEnv?: string;
  apiKeyEnv?: string;
}

export function addGatewayOptions(command: Command): Command {
  return command.option(
    '--gateway-url <url>',
    `gateway base URL [env GATEWAY_URL; default ${DEFAULT_GATEWAY_URL}]`,
  );
}

export function gatewayUrl(opts: GatewayOptions, io: CliIo): string {
  const url = opts.gatewayUrl ?? io.env.GATEWAY_URL ?? DEFAULT_GATEWAY_URL;
  if (!/^https?:\/\/[^/]+/.test(url)) throw new UsageError('--gateway-url must be an http(s) URL');
  return url.replace(/\/+$/, '');
}

/** The value of the variable named `name`, or a usage error naming the variable (not the value). */
export function keyFromEnv(io: CliIo, name: string, first = false): string {
  const raw = io.env[name]?.trim();
  if (!raw) throw new UsageError(`environment variable ${name} is not set`);
  return first ? raw.split(',')[0]!.trim() : raw;
}

export interface GatewayResponse {
  status: number;
  body: Record<string, unknown>;
}

/** A status of 300 or more as a CliFailure carrying the gateway's message. */
function failureOf(method: string, path: string, status: number, text: string): CliFailure {
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {}
  const error = parsed.error as { message?: string; code?: string } | undefined;
  return new CliFailure(
    `${method} ${path}: HTTP ${status}${error?.code ? ` ${error.code}` : ''}: ${error?.message ?? text}`,
  );
}

/**
 * One request whose answer is NDJSON (the batch settle): each line is parsed and handed to `onLine`
 * as it arrives. No overall timeout: the gateway ends the stream once its work is done.
 */
export async function streamGateway(
  io: CliIo,
  base: string,
  key: string,
  method: string,
  path: string,
  body: object,
  onLine: (line: Record<string, unknown>) => void,
): Promise<void> {
  const doFetch = io.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw new CliFailure(`gateway at ${base} not reachable: ${(err as Error).message}`);
  }
  if (res.status >= 300 || !res.body) throw failureOf(method, path, res.status, await res.text());
  const decoder = new TextDecoder();
  let pending = '';
  const take = (text: string) => {
    pending += text;
    for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
      const line = pending.slice(0, at).trim();
      pending = pending.slice(at + 1);
      if (line !== '') onLine(JSON.parse(line) as Record<string, unknown>);
    }
  };
  const reader = res.body.getReader();
  for (;;) {
    let read: Awaited<ReturnType<typeof reader.read>>;
    try {
      read = await reader.read();
    } catch (err) {
      throw new CliFailure(`${method} ${path}: the answer broke off: ${(err as Error).message}`);
    }
    if (read.done) break;
    take(decoder.decode(read.value, { stream: true }));
  }
  take(`${decoder.decode()}\n`);
}

/** One JSON request; a status of 300 or more is a CliFailure carrying the gateway's message. */
export async function callGateway(
  io: CliIo,
  base: string,
  key: string,
  method: string,
  path: string,
  body?: object,
): Promise<GatewayResponse> {
  const doFetch = io.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(180_000),
    });
  } catch (err) {
    throw new CliFailure(`gateway at ${base} not reachable: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (res.status >= 300) throw failureOf(method, path, res.status, text);
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { text };
  }
  return { status: res.status, body: parsed };
}
