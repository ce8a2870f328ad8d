// `gwctl sign-request` and `gwctl send-request` (gateway-spec.md §5.2; chain-and-network.md §4).
// The body file's bytes are signed and sent exactly as read: never parsed and re-serialised.
import { readFile } from 'node:fs/promises';
import {
  CHAT_COMPLETIONS_PATH,
  DIRECT_SIGNING_SCHEMES,
  type DirectEndpoint,
  DirectRequestSigner,
  type DirectSigningScheme,
  discoverDirectEndpoints,
  inferenceBaseUrl,
  isAddress,
  parseEndpointOverride,
  pickEndpoint,
  queryParticipants,
  sendDirectRequest,
  streamDirectRequest,
} from '@gonka-gateway/chain';
import { type Command, Option } from 'commander';
import { CliFailure, type CliIo, UsageError } from '../cli-io.js';
import {
  addKeyOptions,
  chainClient,
  type GlobalOptions,
  type KeyOptions,
  loadKey,
  parseMs,
} from '../context.js';
import { printJson } from '../output.js';

const schemeOption = () =>
  new Option(
    '--scheme <scheme>',
    'signed message scheme (body-sha256: current nodes; raw-body: written spec, older nodes)',
  )
    .choices([...DIRECT_SIGNING_SCHEMES])
    .default('body-sha256');

async function readBody(path: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (err) {
    throw new UsageError(`cannot read body file ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function parseTimestamp(value: string | undefined): bigint | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || BigInt(value) <= 0n)
    throw new UsageError('--timestamp must be positive decimal nanoseconds');
  return BigInt(value);
}

type SignOpts = GlobalOptions &
  KeyOptions & { bodyFile: string; providerAddress: string; timestamp?: string; scheme: DirectSigningScheme };
type SendOpts = GlobalOptions &
  KeyOptions & {
    bodyFile: string;
    endpoint?: string;
    providerAddress?: string;
    stream?: boolean;
    scheme: DirectSigningScheme;
    path: string;
    requestTimeoutMs?: string;
  };

async function resolveEndpoint(opts: SendOpts, io: CliIo): Promise<DirectEndpoint> {
  if (opts.endpoint?.includes(';')) return parseEndpointOverride(opts.endpoint);
  if (opts.providerAddress !== undefined && !isAddress(opts.providerAddress)) {
    throw new UsageError('--provider-address must be a gonka1… address');
  }
  const client = chainClient(opts, io);
  if (opts.endpoint !== undefined) {
    if (!/^https?:\/\//.test(opts.endpoint))
      throw new UsageError('--endpoint must be an http(s) URL, optionally followed by ;transferAddress');
    const baseUrl = inferenceBaseUrl(opts.endpoint);
    if (opts.providerAddress !== undefined) return { baseUrl, transferAddress: opts.providerAddress };
    // A bare URL: the signed provider address is the participant serving it (§4.1 step 3).
    const { participants } = await queryParticipants(client);
    const match = participants.find(
      (p) => p.inferenceUrl !== '' && inferenceBaseUrl(p.inferenceUrl) === baseUrl,
    );
    if (!match)
      throw new UsageError(
        'no participant serves that URL: pass --provider-address or --endpoint "url;transferAddress"',
      );
    return { baseUrl, transferAddress: match.address };
  }
  return pickEndpoint(await discoverDirectEndpoints(client), io.random);
}

function streamContent(data: string): string {
  try {
    const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: unknown } }> };
    const content = chunk.choices?.[0]?.delta?.content;
    return typeof content === 'string' ? content : '';
  } catch {
    return '';
  }
}

export function registerDirectRequests(program: Command, io: CliIo): void {
  addKeyOptions(
    program
      .command('sign-request')
      .description('print the headers of a signed direct request as JSON, without sending it')
      .requiredOption('--body-file <file>', 'JSON request body; its exact bytes are signed')
      .requiredOption('--provider-address <address>', 'transfer (provider) address that is signed')
      .option('--timestamp <ns>', 'X-Timestamp in nanoseconds (default: now, strictly increasing)')
      .addOption(schemeOption()),
  ).action(async (_opts: unknown, command: Command) => {
    const opts = command.optsWithGlobals<SignOpts>();
    if (!isAddress(opts.providerAddress))
      throw new UsageError('--provider-address must be a gonka1… address');
    const timestampNs = parseTimestamp(opts.timestamp);
    const body = await readBody(opts.bodyFile);
    const key = await loadKey(opts, io, command);
    const signer = new DirectRequestSigner(key, { scheme: opts.scheme, nowNs: io.nowNs });
    printJson(io.stdout, signer.sign(body, opts.providerAddress, { timestampNs }).headers);
  });

  addKeyOptions(
    program
      .command('send-request')
      .description(
        'sign and send a direct request to a network endpoint (random eligible participant by default)',
      )
      .requiredOption('--body-file <file>', 'JSON request body; sent byte for byte as signed')
      .option(
        '--endpoint <url>',
        'fixed endpoint: "url;transferAddress", or a URL (with --provider-address, or looked up in participants)',
      )
      .option('--provider-address <address>', 'transfer address to sign for a bare --endpoint URL')
      .option('--stream', 'stream the answer (the body must contain "stream": true)')
      .option('--path <path>', 'path under the endpoint /v1 base', CHAT_COMPLETIONS_PATH)
      .option(
        '--request-timeout-ms <ms>',
        'timeout (whole request, or first byte when streaming); default 120000',
      )
      .addOption(schemeOption()),
  ).action(async (_opts: unknown, command: Command) => {
    const opts = command.optsWithGlobals<SendOpts>();
    if (!opts.path.startsWith('/')) throw new UsageError('--path must start with /');
    const body = await readBody(opts.bodyFile);
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch {
      throw new UsageError('body file is not valid UTF-8 JSON');
    }
    const wantsStream =
      !!parsed && typeof parsed === 'object' && (parsed as { stream?: unknown }).stream === true;
    if (opts.stream && !wantsStream) {
      throw new UsageError(
        '--stream needs "stream": true in the body (the signed bytes are sent unchanged, so gwctl cannot add it)',
      );
    }
    const key = await loadKey(opts, io, command);
    const endpoint = await resolveEndpoint(opts, io);
    const signer = new DirectRequestSigner(key, { scheme: opts.scheme, nowNs: io.nowNs });
    const input = {
      fetch: io.fetch,
      endpoint,
      signer,
      body,
      path: opts.path,
      timeoutMs: parseMs(opts.requestTimeoutMs, 120_000, '--request-timeout-ms'),
    };
    io.stderr.write(
      `sending to ${displayUrl(endpoint.baseUrl)}${opts.path} (provider ${endpoint.transferAddress}, scheme ${opts.scheme})\n`,
    );
    if (opts.stream) {
      const stream = await streamDirectRequest(input);
      for await (const event of stream.events) {
        if (opts.json) io.stdout.write(`${event.data}\n`);
        else if (event.data !== '[DONE]') io.stdout.write(streamContent(event.data));
      }
      if (!opts.json) io.stdout.write('\n');
      return;
    }
    const res = await sendDirectRequest(input);
    if (opts.json) {
      io.stdout.write(res.text.endsWith('\n') ? res.text : `${res.text}\n`);
      return;
    }
    let content: unknown;
    try {
      content = (JSON.parse(res.text) as { choices?: Array<{ message?: { content?: unknown } }> })
        .choices?.[0]?.message?.content;
    } catch {
      throw new CliFailure(`endpoint answered HTTP ${res.status} with a non-JSON body`);
    }
    io.stdout.write(typeof content === 'string' ? `${content}\n` : `${res.text}\n`);
  });
}

/** Origin and path only: credentials or tokens in a URL's userinfo or query must not be printed. */
function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return '(endpoint)';
  }
}
