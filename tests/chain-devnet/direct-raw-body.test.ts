// Signed direct requests against a devnet verifying the written specification's `raw-body` scheme
// (chain-and-network.md §4.2), `gwctl send-request --scheme raw-body` and the library's raw-body
// signer get completions, streaming and not; the default scheme is refused. The model streams token
// by token here, so SSE frames arrive in separate chunks.
import {
  DirectRequestSigner,
  discoverDirectEndpoints,
  isChainError,
  sendDirectRequest,
  streamDirectRequest,
} from '@gonka-gateway/chain';
import { type Devnet, MockModel, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, clientFor, errorLine, gwctl, scratchDir, startChainDevnet } from './harness.js';

let devnet: Devnet;
let scratch: Awaited<ReturnType<typeof scratchDir>>;
let plainFile: string;
let streamFile: string;

// Key order and spacing are unusual on purpose: the bytes signed must be the bytes sent.
const plainText = `{ "messages": [{"role": "user", "content": "raw body, please"}],\n  "model": "${QWEN_MODEL}", "max_tokens": 12 }`;
const streamText = `{"stream": true, "model": "${QWEN_MODEL}", "messages": [{"role": "user", "content": "raw body, please"}], "max_tokens": 12}`;
const expectedText = () => new MockModel().complete(JSON.parse(plainText)).text;

beforeAll(async () => {
  devnet = await startChainDevnet({ directSigningScheme: 'raw-body', modelLatency: { perTokenMs: 1 } });
  scratch = await scratchDir();
  plainFile = await scratch.file('plain.json', plainText);
  streamFile = await scratch.file('stream.json', streamText);
});

afterAll(async () => {
  await devnet?.close();
  await scratch?.cleanup();
});

const key = () => account(devnet, 'creator-1').key;

describe('raw-body scheme', () => {
  it('gwctl send-request --scheme raw-body: non-streaming completion', async () => {
    const run = await gwctl(devnet, ['send-request', '--body-file', plainFile, '--scheme', 'raw-body'], {
      key: key(),
      random: () => 0.3,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('scheme raw-body)');
    expect(run.stdout).toBe(`${expectedText()}\n`);
  });

  it('gwctl send-request --scheme raw-body --stream: streamed completion', async () => {
    const run = await gwctl(
      devnet,
      ['send-request', '--body-file', streamFile, '--stream', '--scheme', 'raw-body'],
      {
        key: key(),
        random: () => 0.8,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${expectedText()}\n`);
  });

  it('the default body-sha256 scheme is refused as an invalid signature (streaming and not)', async () => {
    for (const argv of [
      ['--body-file', plainFile],
      ['--body-file', streamFile, '--stream'],
    ]) {
      const run = await gwctl(devnet, ['send-request', ...argv], { key: key(), random: () => 0 });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(errorLine(run)).toContain(
        'direct request rejected (HTTP 401): Unable to validate request against PubKey: invalid signature',
      );
    }
  });

  it('library: a raw-body signer gets completions from every participant, streaming and not', async () => {
    const endpoints = await discoverDirectEndpoints(clientFor(devnet));
    expect(endpoints).toHaveLength(devnet.participants.length);
    const signer = new DirectRequestSigner(key(), { scheme: 'raw-body' });
    for (const endpoint of endpoints) {
      const res = await sendDirectRequest({ endpoint, signer, body: new TextEncoder().encode(plainText) });
      expect(JSON.parse(res.text).choices[0].message.content).toBe(expectedText());

      const stream = await streamDirectRequest({
        endpoint,
        signer,
        body: new TextEncoder().encode(streamText),
      });
      const data: string[] = [];
      for await (const event of stream.events) data.push(event.data);
      expect(data.at(-1)).toBe('[DONE]');
      const text = data
        .slice(0, -1)
        .map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '')
        .join('');
      expect(text).toBe(expectedText());
    }
  });

  it('library: a body-sha256 signer is refused with a typed error', async () => {
    const [endpoint] = await discoverDirectEndpoints(clientFor(devnet));
    const err = await sendDirectRequest({
      endpoint: endpoint!,
      signer: new DirectRequestSigner(key()),
      body: new TextEncoder().encode(plainText),
    }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isChainError(err, 'CHAIN_ERR_DIRECT_REJECTED')).toBe(true);
    expect(err).toMatchObject({ status: 401 });
  });
});
