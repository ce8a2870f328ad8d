// `gwctl chat "message"`: one chat completion through the gateway with a user key (spec §2.7, §5.1),
// streamed as it arrives with --stream. The key is the first of DEVSHARD_API_KEYS unless
// --api-key-env names another variable.
import type { Command } from 'commander';
import { CliFailure, type CliIo } from '../cli-io.js';
import { parsePositive } from '../context.js';
import {
  addGatewayOptions,
  callGateway,
  DEFAULT_MODEL,
  type GatewayOptions,
  gatewayUrl,
  keyFromEnv,
} from '../gateway-client.js';

export function registerChat(program: Command, io: CliIo): void {
  const command = program
    .command('chat <message>')
    .description('send one chat completion through the gateway with a user key ($DEVSHARD_API_KEYS)')
    .option('--model <id>', 'model', DEFAULT_MODEL)
    .option('--max-tokens <n>', 'max_tokens')
    .option('--stream', 'stream the answer as it is generated')
    .option(
      '--api-key-env <name>',
      'environment variable holding the user key (first if comma-separated)',
      'DEVSHARD_API_KEYS',
    );
  addGatewayOptions(command);
  command.action(async (message: string, _o: unknown, cmd: Command) => {
    const opts = cmd.optsWithGlobals<
      GatewayOptions & { model: string; maxTokens?: string; stream?: boolean; apiKeyEnv: string }
    >();
    const base = gatewayUrl(opts, io);
    const key = keyFromEnv(io, opts.apiKeyEnv, true);
    const body = {
      model: opts.model,
      messages: [{ role: 'user', content: message }],
      ...(opts.maxTokens ? { max_tokens: Number(parsePositive(opts.maxTokens, '--max-tokens')) } : {}),
    };
    if (!opts.stream) {
      const { body: completion } = await callGateway(io, base, key, 'POST', '/v1/chat/completions', body);
      const choices = completion.choices as { message?: { content?: string } }[] | undefined;
      io.stdout.write(`${choices?.[0]?.message?.content ?? ''}\n`);
      return;
    }
    const res = await (io.fetch ?? fetch)(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    if (res.status !== 200 || !res.body) {
      const text = await res.text();
      let error = text;
      try {
        error = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
      } catch {
        // not JSON
      }
      throw new CliFailure(`POST /v1/chat/completions: HTTP ${res.status}: ${error}`);
    }
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      let newline = pending.indexOf('\n');
      while (newline !== -1) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line.startsWith('data: ') && line !== 'data: [DONE]') {
          const event = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] };
          io.stdout.write(event.choices?.[0]?.delta?.content ?? '');
        }
        newline = pending.indexOf('\n');
      }
    }
    io.stdout.write('\n');
  });
}
