import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gwctl, PROVIDER, TEST_ADDRESS, TEST_KEY } from '../testing/cli-harness.js';
import { type FakeNetwork, startFakeNetwork } from '../testing/fake-network.js';

// chain-and-network.md §4.7: the 98-byte body, no trailing newline.
const BODY =
  '{"model":"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8","messages":[{"role":"user","content":"Hello!"}]}';
const VECTORS = [
  [
    'V1',
    'body-sha256',
    '1760000000000000000',
    TEST_ADDRESS,
    'VQjQ4cHlXc7i0pBpJcb/Xws71n9LoS3r0DdcvBOTmO4RDWhMqk+lioSIegyxk+uT8lWMB+geNllhql6bvlrHjw==',
  ],
  [
    'V2',
    'raw-body',
    '1760000000000000000',
    TEST_ADDRESS,
    '28r7mifwUC8YaMpokxn//bkdkqWKo93TJwmS+aIefewy8lcqLUZr1x9atoBKnZm+xYTVD4FwaqXXgZ3ax/SBEg==',
  ],
  [
    'V3',
    'body-sha256',
    '1760000000000000001',
    PROVIDER,
    'qgfCd2ExcYctR7xh87SbZ6/KdNjMI8cm6wLOhLO99/AuKPUHLFZpUooSZGDHg9G4zDoJXuqrFjm6AUQphKsS/Q==',
  ],
  [
    'V4',
    'raw-body',
    '1760000000000000001',
    PROVIDER,
    'qtNlXG+CpRmU4RP7YyrB80Z60eJSrdoC4YPe/gAvQwZgeGz/zyjM3piKfFYVxN36jEUYU1sfSrz7UuGZpFBJYA==',
  ],
] as const;

let dir: string;
let bodyFile: string;
let keyFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gwctl-direct-'));
  bodyFile = join(dir, 'body.json');
  keyFile = join(dir, 'key.hex');
  await writeFile(bodyFile, BODY);
  await writeFile(keyFile, `${TEST_KEY}\n`, { mode: 0o600 });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('gwctl sign-request reproduces vectors V1–V4 byte for byte', () => {
  for (const [name, scheme, ts, provider, authorization] of VECTORS) {
    it(name, async () => {
      const run = await gwctl(
        [
          'sign-request',
          '--private-key-env',
          'GW_TEST_KEY',
          '--body-file',
          bodyFile,
          '--provider-address',
          provider,
          '--timestamp',
          ts,
          '--scheme',
          scheme,
        ],
        { env: { GW_TEST_KEY: TEST_KEY } },
      );
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const expected = `${JSON.stringify(
        {
          Authorization: authorization,
          'Content-Type': 'application/json',
          'X-Requester-Address': TEST_ADDRESS,
          'X-Timestamp': ts,
        },
        null,
        2,
      )}\n`;
      expect(run.stdout).toBe(expected);
    });
  }

  it('reads the key from a file too, defaults to body-sha256, and never prints the key', async () => {
    const run = await gwctl([
      'sign-request',
      '--private-key-file',
      keyFile,
      '--body-file',
      bodyFile,
      '--provider-address',
      TEST_ADDRESS,
      '--timestamp',
      '1760000000000000000',
    ]);
    expect(JSON.parse(run.stdout).Authorization).toBe(VECTORS[0][4]);
    expect(run.stdout + run.stderr).not.toContain(TEST_KEY);
  });

  it('uses a strictly increasing clock timestamp when none is given', async () => {
    const run = await gwctl(['sign-request', '--body-file', bodyFile, '--provider-address', PROVIDER], {
      env: { DEVSHARD_PRIVATE_KEY: TEST_KEY },
      nowNs: () => 1_760_000_000_000_000_001n,
    });
    expect(JSON.parse(run.stdout)).toMatchObject({
      'X-Timestamp': '1760000000000000001',
      Authorization: VECTORS[2][4],
    });
  });

  it('rejects a bad provider address and an unknown scheme', async () => {
    const env = { DEVSHARD_PRIVATE_KEY: TEST_KEY };
    expect(
      (await gwctl(['sign-request', '--body-file', bodyFile, '--provider-address', 'nope'], { env })).code,
    ).toBe(2);
    expect(
      (
        await gwctl(
          ['sign-request', '--body-file', bodyFile, '--provider-address', PROVIDER, '--scheme', 'hex'],
          { env },
        )
      ).code,
    ).toBe(2);
  });
});

describe('gwctl send-request', () => {
  let net: FakeNetwork;
  beforeAll(async () => {
    net = await startFakeNetwork();
  });
  afterAll(() => net.close());
  const env = () => ({
    DEVSHARD_PRIVATE_KEY: TEST_KEY,
    DEVSHARD_CHAIN_REST: net.url,
    DEVSHARD_PUBLIC_API: net.url,
  });

  it('picks an allowlisted participant, signs its address and prints the answer', async () => {
    const run = await gwctl(['send-request', '--body-file', bodyFile], { env: env() });
    expect(run.stderr).toContain(`provider ${PROVIDER}`);
    expect(run).toMatchObject({ code: 0, stdout: 'Hello back\n' });
    const sent = net.requests.at(-1)!;
    expect(sent.path).toBe('/node/v1/chat/completions');
    expect(sent.body.toString()).toBe(BODY);
    expect(sent.headers['x-transfer-address']).toBeUndefined();
  });

  it('--json prints the endpoint body as received', async () => {
    const run = await gwctl(
      ['--json', 'send-request', '--body-file', bodyFile, '--endpoint', `${net.url}/node;${PROVIDER}`],
      { env: env() },
    );
    expect(JSON.parse(run.stdout).choices[0].message.content).toBe('Hello back');
  });

  it('streams with --stream', async () => {
    const streamFile = join(dir, 'stream.json');
    await writeFile(streamFile, '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}');
    const run = await gwctl(
      ['send-request', '--body-file', streamFile, '--stream', '--endpoint', `${net.url}/node`],
      { env: env() },
    );
    expect(run).toMatchObject({ code: 0, stdout: 'Hello\n' });
    const noStream = await gwctl(['send-request', '--body-file', bodyFile, '--stream'], { env: env() });
    expect(noStream.code).toBe(2);
    expect(noStream.stderr).toContain('"stream": true');
  });

  it('a node rejection is one line with the node message and a hint, exit 1', async () => {
    const run = await gwctl(
      ['send-request', '--body-file', bodyFile, '--endpoint', `${net.url}/other;${PROVIDER}`],
      { env: env() },
    );
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      /direct request rejected \(HTTP 403\): Transfer Agent not allowed \[CHAIN_ERR_DIRECT_REJECTED\] \(hint: .*allowed_transfer_addresses/,
    );
    expect(run.stderr).not.toMatch(/[A-Za-z0-9+/]{86}==/);
  });
});
