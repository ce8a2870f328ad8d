// Signed direct requests against a devnet verifying the default `body-sha256` scheme
// (chain-and-network.md §4): signed direct requests through gwctl and the library get completions,
// streaming and not; every rejection the node makes reaches the user as a one-line gwctl error with
// the node's message and a hint, and as CHAIN_ERR_DIRECT_REJECTED from the library.
import {
  type ChainError,
  type DirectEndpoint,
  DirectRequestSigner,
  discoverDirectEndpoints,
  inferenceBaseUrl,
  isChainError,
  PrivateKey,
  sendDirectRequest,
  streamDirectRequest,
} from '@gonka-gateway/chain';
import { type Devnet, MINIMAX_MODEL, MockModel, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  account,
  type CliRun,
  clientFor,
  errorLine,
  gwctl,
  participant,
  scratchDir,
  startChainDevnet,
  wallClockNs,
} from './harness.js';

let devnet: Devnet;
let scratch: Awaited<ReturnType<typeof scratchDir>>;
let plainFile: string;
let streamFile: string;

const request = {
  model: QWEN_MODEL,
  messages: [{ role: 'user', content: 'Hello from gwctl' }],
  max_tokens: 24,
};
const streamRequest = { ...request, stream: true };
/** What the devnet's deterministic model answers (the completion id aside). */
const expectedText = () => new MockModel().complete(request).text;

beforeAll(async () => {
  devnet = await startChainDevnet();
  scratch = await scratchDir();
  plainFile = await scratch.file('plain.json', JSON.stringify(request));
  streamFile = await scratch.file('stream.json', JSON.stringify(streamRequest));
});

afterAll(async () => {
  await devnet?.close();
  await scratch?.cleanup();
});

afterEach(() => {
  devnet.faults.clear();
});

const creator = () => account(devnet, 'creator-0');
const hostEndpoint = (name: string): DirectEndpoint => {
  const p = participant(devnet, name);
  return { baseUrl: inferenceBaseUrl(p.inferenceUrl), transferAddress: p.address };
};
const override = (name: string, provider = participant(devnet, name).address) =>
  `${participant(devnet, name).inferenceUrl};${provider}`;

const send = (argv: string[], options: Parameters<typeof gwctl>[2] = {}) =>
  gwctl(devnet, ['send-request', ...argv], { key: creator().key, ...options });

/** Exit 1, one line naming the endpoint, the HTTP status, the node's message and (when known) a hint. */
function expectRejected(run: CliRun, status: number, message: string, hint?: string): string {
  expect(run.code).toBe(1);
  expect(run.stdout).toBe('');
  const line = errorLine(run);
  expect(line).toMatch(/^gwctl: POST \/chat\/completions \(direct endpoint gonka1[0-9a-z]+\): /);
  expect(line).toContain(`direct request rejected (HTTP ${status}): ${message}`);
  expect(line).toContain('[CHAIN_ERR_DIRECT_REJECTED]');
  if (hint) expect(line).toContain(`(hint: ${hint}`);
  // Nothing secret in what the operator sees.
  expect(run.stderr).not.toContain(creator().key.exportHex());
  expect(run.stderr).not.toMatch(/authorization/i);
  return line;
}

/** creator-1 signs, the transport claims the request comes from creator-0. */
function forgedRequest() {
  const forging: typeof fetch = (input, init) =>
    fetch(input, {
      ...init,
      headers: { ...(init?.headers as Record<string, string>), 'X-Requester-Address': creator().address },
    });
  return sendDirectRequest({
    fetch: forging,
    endpoint: hostEndpoint('host-1'),
    signer: new DirectRequestSigner(account(devnet, 'creator-1').key),
    body: new TextEncoder().encode(JSON.stringify(request)),
  });
}

async function rejection(promise: Promise<unknown>): Promise<ChainError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isChainError(err, 'CHAIN_ERR_DIRECT_REJECTED'))
    throw new Error(`expected a direct rejection, got ${err}`);
  return err;
}

describe('gwctl send-request gets a completion', () => {
  it('non-streaming, to a randomly picked eligible participant: prints the content', async () => {
    for (const random of [() => 0, () => 0.999]) {
      const run = await send(['--body-file', plainFile], { random });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${expectedText()}\n`);
      expect(run.stderr).toMatch(
        /^sending to http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions \(provider gonka1\w+, scheme body-sha256\)$/m,
      );
    }
  });

  it('non-streaming --json: prints the node body as received', async () => {
    const run = await send(['--body-file', plainFile, '--json'], { random: () => 0 });
    expect(run.code, run.stderr).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(body).toMatchObject({ object: 'chat.completion', model: QWEN_MODEL });
    expect(body.choices[0].message.content).toBe(expectedText());
    expect(body.usage.completion_tokens).toBeGreaterThan(0);
  });

  it('streaming: prints the deltas as they come; --json prints every SSE data line ending with [DONE]', async () => {
    const run = await send(['--body-file', streamFile, '--stream'], { random: () => 0.5 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${expectedText()}\n`);

    const json = await send(['--body-file', streamFile, '--stream', '--json'], { random: () => 0.5 });
    expect(json.code, json.stderr).toBe(0);
    const lines = json.stdout.trimEnd().split('\n');
    expect(lines.at(-1)).toBe('[DONE]');
    const chunks = lines.slice(0, -1).map((l) => JSON.parse(l));
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(expectedText());
  });

  it('to a fixed endpoint: "url;address", or a bare URL whose provider is looked up in the participants', async () => {
    const fixed = await send(['--body-file', plainFile, '--endpoint', override('host-2')]);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stderr).toContain(`(provider ${participant(devnet, 'host-2').address}, scheme body-sha256)`);

    const bare = await send([
      '--body-file',
      streamFile,
      '--stream',
      '--endpoint',
      participant(devnet, 'host-3').inferenceUrl,
    ]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stderr).toContain(`(provider ${participant(devnet, 'host-3').address}, scheme body-sha256)`);
    expect(bare.stdout).toBe(`${expectedText()}\n`);
  });

  it('to the public node, which answers as host-0', async () => {
    const run = await send([
      '--body-file',
      plainFile,
      '--endpoint',
      `${devnet.urls.node};${participant(devnet, 'host-0').address}`,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${expectedText()}\n`);
  });

  it('sign-request prints headers the node accepts when sent with the same body bytes', async () => {
    const host = participant(devnet, 'host-1');
    const signed = await gwctl(
      devnet,
      ['sign-request', '--body-file', plainFile, '--provider-address', host.address],
      {
        key: creator().key,
      },
    );
    expect(signed.code, signed.stderr).toBe(0);
    const headers = JSON.parse(signed.stdout) as Record<string, string>;
    expect(Object.keys(headers).sort()).toEqual([
      'Authorization',
      'Content-Type',
      'X-Requester-Address',
      'X-Timestamp',
    ]);
    const res = await fetch(`${inferenceBaseUrl(host.inferenceUrl)}/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify(request),
    });
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message
        .content,
    ).toBe(expectedText());
  });
});

describe('the library gets a completion', () => {
  it('discovers every participant, and each answers signed requests, streaming and not', async () => {
    const endpoints = await discoverDirectEndpoints(clientFor(devnet));
    expect(endpoints.map((e) => e.transferAddress).sort()).toEqual(
      devnet.participants.map((p) => p.address).sort(),
    );
    const signer = new DirectRequestSigner(creator().key);
    const body = new TextEncoder().encode(JSON.stringify({ ...request, model: MINIMAX_MODEL }));
    const expected = new MockModel().complete({ ...request, model: MINIMAX_MODEL }).text;
    for (const endpoint of endpoints) {
      const minimaxServed = endpoint.transferAddress !== participant(devnet, 'host-3').address;
      if (!minimaxServed) continue;
      const res = await sendDirectRequest({ endpoint, signer, body });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text).choices[0].message.content).toBe(expected);
    }
    const stream = await streamDirectRequest({
      endpoint: endpoints[0]!,
      signer,
      body: new TextEncoder().encode(JSON.stringify(streamRequest)),
    });
    expect(stream.contentType).toContain('text/event-stream');
    let text = '';
    let done = false;
    for await (const event of stream.events) {
      if (event.data === '[DONE]') done = true;
      else text += JSON.parse(event.data).choices[0]?.delta?.content ?? '';
    }
    expect(done).toBe(true);
    expect(text).toBe(expectedText());
  });
});

describe('each rejection reaches the user', () => {
  it('wrong signature: the other scheme', async () => {
    const run = await send(['--body-file', plainFile, '--scheme', 'raw-body'], { random: () => 0 });
    expectRejected(run, 401, 'Unable to validate request against PubKey: invalid signature');
  });

  it('wrong signature: signed for another provider than the one that receives it', async () => {
    const run = await send([
      '--body-file',
      plainFile,
      '--endpoint',
      override('host-0', participant(devnet, 'host-1').address),
    ]);
    expectRejected(run, 401, 'Unable to validate request against PubKey: invalid signature');
  });

  it('wrong signature (library): the requester address is not the signing key', async () => {
    const err = await rejection(forgedRequest());
    expect(err).toMatchObject({ status: 401, code: 'CHAIN_ERR_DIRECT_REJECTED' });
    expect(err.message).toContain('invalid signature');
  });

  // BUG (packages/chain/src/direct/rejection-hints.ts): the node's invalid-signature message is
  // "Unable to validate request against PubKey: invalid signature"; the /pub\s*key/i rule comes
  // before the /signature/i rule, so the operator is told to publish the public key (already
  // published) instead of checking the signing scheme — the usual cause of this rejection.
  it('an invalid-signature rejection carries the signing-scheme hint, not the publish-pubkey one', async () => {
    const run = await send(['--body-file', plainFile, '--scheme', 'raw-body'], { random: () => 0 });
    expect(errorLine(run)).not.toContain('publish the public key first');
    expect(errorLine(run)).toContain(
      '(hint: signature rejected: check the signing scheme (body-sha256 vs raw-body)',
    );
    const err = await rejection(forgedRequest());
    expect(err.hint).toMatch(/signing scheme/);
  });

  it('stale timestamp (and one too far ahead): 400 with the clock hint', async () => {
    const old = await send(['--body-file', plainFile], {
      random: () => 0,
      nowNs: () => wallClockNs() - 120_000_000_000n,
    });
    expectRejected(old, 400, 'Request timestamp is too old', 'X-Timestamp must lie within');
    const ahead = await send(['--body-file', plainFile], {
      random: () => 0,
      nowNs: () => wallClockNs() + 120_000_000_000n,
    });
    expectRejected(ahead, 400, 'Request timestamp is in the future', 'X-Timestamp must lie within');
  });

  it('replay: the same body, timestamp and provider sent twice; the second is refused', async () => {
    const fixedNow = wallClockNs();
    const options = { random: () => 0, nowNs: () => fixedNow };
    const first = await send(['--body-file', plainFile], options);
    expect(first.code, first.stderr).toBe(0);
    const second = await send(['--body-file', plainFile], options);
    expectRejected(second, 400, 'AuthKey has already been used for a transfer request');

    // Library: an explicit timestamp reused by a fresh signer (e.g. two processes sharing a key).
    const body = new TextEncoder().encode(JSON.stringify(request));
    const timestampNs = wallClockNs();
    const input = (signer: DirectRequestSigner) => ({
      endpoint: hostEndpoint('host-2'),
      signer,
      body,
      timestampNs,
    });
    expect((await sendDirectRequest(input(new DirectRequestSigner(creator().key)))).status).toBe(200);
    const err = await rejection(sendDirectRequest(input(new DirectRequestSigner(creator().key))));
    expect(err).toMatchObject({ status: 400 });
    expect(err.message).toContain('already been used');
  });

  it('one signer never replays itself: back-to-back requests get distinct timestamps', async () => {
    // A clock that does not move between the two requests (coarse clocks do this).
    const frozen = wallClockNs();
    const signer = new DirectRequestSigner(creator().key, { nowNs: () => frozen });
    const body = new TextEncoder().encode(JSON.stringify(request));
    const a = await sendDirectRequest({ endpoint: hostEndpoint('host-3'), signer, body });
    const b = await sendDirectRequest({ endpoint: hostEndpoint('host-3'), signer, body });
    expect(b.timestampNs).toBe(a.timestampNs + 1n);
    expect([a.status, b.status]).toEqual([200, 200]);
  });

  it('unknown account: 401 account not found, with the fund-and-publish hint', async () => {
    const stranger = PrivateKey.random();
    const run = await send(['--body-file', plainFile], { key: stranger, random: () => 0 });
    expectRejected(run, 401, 'account not found', 'the requester account does not exist on chain');
  });

  it('account without a published pubkey: 401, with the publish-pubkey hint (streaming too)', async () => {
    const fresh = account(devnet, 'outsider-fresh');
    const run = await send(['--body-file', streamFile, '--stream'], { key: fresh.key, random: () => 0 });
    expectRejected(run, 401, 'pubkey unavailable', 'publish the public key first (gwctl publish-pubkey)');

    const err = await rejection(
      streamDirectRequest({
        endpoint: hostEndpoint('host-0'),
        signer: new DirectRequestSigner(fresh.key),
        body: new TextEncoder().encode(JSON.stringify(streamRequest)),
      }),
    );
    expect(err).toMatchObject({ status: 401 });
  });

  it('provider not in allowed_transfer_addresses: 403 Transfer Agent not allowed; discovery skips it', async () => {
    const allowed = participant(devnet, 'host-1').address;
    devnet.chain.updateParams((p) => {
      p.transferAgentAccess.allowedTransferAddresses = [allowed];
    });
    try {
      const run = await send(['--body-file', plainFile, '--endpoint', override('host-0')]);
      expectRejected(
        run,
        403,
        'Transfer Agent not allowed',
        'the provider is not on allowed_transfer_addresses',
      );

      const err = await rejection(
        sendDirectRequest({
          endpoint: hostEndpoint('host-2'),
          signer: new DirectRequestSigner(creator().key),
          body: new TextEncoder().encode(JSON.stringify(request)),
        }),
      );
      expect(err).toMatchObject({ status: 403 });

      // Random selection only ever picks the allowlisted provider.
      for (const random of [() => 0, () => 0.999]) {
        const ok = await send(['--body-file', plainFile], { random });
        expect(ok.code, ok.stderr).toBe(0);
        expect(ok.stderr).toContain(`(provider ${allowed}, `);
      }
    } finally {
      devnet.chain.updateParams((p) => {
        p.transferAgentAccess.allowedTransferAddresses = [];
      });
    }
  });

  it('spendable balance below the request cost: 402 insufficient balance', async () => {
    devnet.faults.set({ insufficientFunds: [creator().address] });
    const run = await send(['--body-file', plainFile], { random: () => 0 });
    expectRejected(run, 402, 'insufficient balance', 'spendable ngonka must cover');
  });

  it('model not served in the epoch: 400 naming the model', async () => {
    devnet.faults.set({ modelsMissing: [QWEN_MODEL] });
    const run = await send(['--body-file', plainFile, '--endpoint', override('host-1')]);
    expectRejected(run, 400, `model ${QWEN_MODEL} is not served in the current epoch`);
  });

  it('developer gate before until_block_height: 403 with the gate hint', async () => {
    devnet.chain.updateParams((p) => {
      p.developerAccess.untilBlockHeight = devnet.blocks.height + 1_000_000n;
    });
    try {
      const run = await send(['--body-file', plainFile], { random: () => 0 });
      expectRejected(
        run,
        403,
        'inference requests are restricted until block height',
        'requests are limited to allowed_developer_addresses',
      );
    } finally {
      devnet.chain.updateParams((p) => {
        p.developerAccess.untilBlockHeight = 0n;
      });
    }
  });

  it('a provider that is down: exit 1, "no response" naming the endpoint, not the URL', async () => {
    const host = participant(devnet, 'host-3');
    await host.stop();
    try {
      const run = await send(['--body-file', plainFile, '--endpoint', override('host-3')]);
      expect(run.code).toBe(1);
      expect(run.stderr.replace(/^sending to .*\n/m, '')).not.toContain(host.inferenceUrl);
      expect(errorLine(run)).toMatch(
        new RegExp(
          `^gwctl: POST /chat/completions \\(direct endpoint ${host.address}\\): no response: .*\\[CHAIN_ERR_UNREACHABLE\\]$`,
        ),
      );
    } finally {
      await host.start();
    }
  });

  it('usage errors are caught before signing: --stream without "stream": true', async () => {
    const run = await send(['--body-file', plainFile, '--stream']);
    expect(run.code).toBe(2);
    expect(errorLine(run)).toMatch(/--stream needs "stream": true in the body/);
  });
});
