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
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { text };
  }
  if (res.status >= 300) {
    const error = parsed.error as { message?: string; code?: string } | undefined;
    throw new CliFailure(
      `${method} ${path}: HTTP ${res.status}${error?.code ? ` ${error.code}` : ''}: ${error?.message ?? text}`,
    );
  }
  return { status: res.status, body: parsed };
}
