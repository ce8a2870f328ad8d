import { type DirectSigningScheme, directRequestMessage, PrivateKey, sha256 } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { QWEN_MODEL } from '../genesis.js';
import { account, startTestDevnet } from '../testing/test-devnet.js';

const SECOND_NS = 1_000_000_000n;

interface SignOptions {
  provider: string;
  timestampNs: bigint;
  scheme?: DirectSigningScheme;
  requester?: string;
}

/** Signs exactly as chain-and-network.md §4.3 says, over the exact bytes sent. */
function signedHeaders(key: PrivateKey, body: Uint8Array, o: SignOptions): Record<string, string> {
  const message = directRequestMessage(o.scheme ?? 'body-sha256', body, o.timestampNs, o.provider);
  return {
    'content-type': 'application/json',
    authorization: Buffer.from(key.signDigest64(sha256(message))).toString('base64'),
    'x-requester-address': o.requester ?? key.address,
    'x-timestamp': o.timestampNs.toString(),
  };
}

const bodyOf = (extra: Record<string, unknown> = {}) =>
  new TextEncoder().encode(
    JSON.stringify({
      model: QWEN_MODEL,
      messages: [{ role: 'user', content: 'Hello!' }],
      max_tokens: 16,
      ...extra,
    }),
  );

describe('signing method', () => {
  it('reproduces vector V1 of chain-and-network.md §4.7', () => {
    const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
    const body = new TextEncoder().encode(
      '{"model":"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8","messages":[{"role":"user","content":"Hello!"}]}',
    );
    const headers = signedHeaders(key, body, {
      provider: key.address,
      timestampNs: 1_760_000_000_000_000_000n,
    });
    expect(headers.authorization).toBe(
      'VQjQ4cHlXc7i0pBpJcb/Xws71n9LoS3r0DdcvBOTmO4RDWhMqk+lioSIegyxk+uT8lWMB+geNllhql6bvlrHjw==',
    );
  });
});

describe('direct inference endpoint', () => {
  let devnet: Devnet;

  beforeAll(async () => {
    devnet = await startTestDevnet();
  });
  afterAll(() => devnet.close());

  const host = () => devnet.participants[1]!;
  async function send(
    key: PrivateKey,
    body: Uint8Array,
    o: Partial<SignOptions> = {},
    url = `${host().inferenceUrl}/v1/chat/completions`,
  ) {
    const provider = o.provider ?? host().address;
    const res = await fetch(url, {
      method: 'POST',
      headers: signedHeaders(key, body, {
        provider,
        timestampNs: o.timestampNs ?? devnet.blocks.timeNs,
        ...o,
      }),
      body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('accepts a correctly signed request and answers from the mock model', async () => {
    const res = await send(account(devnet, 'creator-0').key, bodyOf());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'chat.completion',
      model: QWEN_MODEL,
      usage: { completion_tokens: expect.any(Number) },
    });
  });

  it('accepts the node as provider host-0 and streams', async () => {
    const res = await fetch(`${devnet.urls.node}/v1/chat/completions`, {
      method: 'POST',
      headers: signedHeaders(account(devnet, 'creator-1').key, bodyOf({ stream: true }), {
        provider: devnet.participants[0]!.address,
        timestampNs: devnet.blocks.timeNs + 1n,
      }),
      body: bodyOf({ stream: true }),
    });
    expect(res.status).toBe(200);
    expect((await res.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('rejects a wrong signature: another provider, another body, another key', async () => {
    const key = account(devnet, 'creator-0').key;
    expect((await send(key, bodyOf(), { provider: devnet.participants[2]!.address })).status).toBe(401);
    const other = account(devnet, 'creator-1').key;
    const res = await send(other, bodyOf(), {
      requester: key.address,
      timestampNs: devnet.blocks.timeNs + 2n,
    });
    expect(res).toMatchObject({
      status: 401,
      body: { message: expect.stringMatching(/Unable to validate request against PubKey/) },
    });
  });

  it('rejects a stale or future timestamp against the latest block time', async () => {
    const key = account(devnet, 'creator-0').key;
    const t = devnet.blocks.timeNs;
    expect(await send(key, bodyOf(), { timestampNs: t - 61n * SECOND_NS })).toMatchObject({
      status: 400,
      body: { message: 'Request timestamp is too old' },
    });
    expect(await send(key, bodyOf(), { timestampNs: t + 31n * SECOND_NS })).toMatchObject({
      status: 400,
      body: { message: 'Request timestamp is in the future' },
    });
    expect((await send(key, bodyOf(), { timestampNs: t - 59n * SECOND_NS })).status).toBe(200);
    // Time moves with the block clock, not the wall clock.
    const signedAt = devnet.blocks.timeNs;
    devnet.blocks.advanceTime(120_000);
    expect((await send(key, bodyOf({ seed: 1 }), { timestampNs: signedAt })).status).toBe(400);
  });

  it('rejects a replayed Authorization', async () => {
    const key = account(devnet, 'creator-0').key;
    const timestampNs = devnet.blocks.timeNs + 5n;
    expect((await send(key, bodyOf(), { timestampNs })).status).toBe(200);
    expect(await send(key, bodyOf(), { timestampNs })).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/already been used/) },
    });
  });

  it('rejects an unknown account and an account without a published pubkey', async () => {
    expect(await send(PrivateKey.random(), bodyOf())).toMatchObject({
      status: 401,
      body: { message: 'account not found' },
    });
    expect(await send(account(devnet, 'outsider-fresh').key, bodyOf())).toMatchObject({
      status: 401,
      body: { message: expect.stringMatching(/pubkey unavailable/) },
    });
  });

  it('rejects when spendable does not cover (prompt estimate + max_tokens) × token_price', async () => {
    const key = account(devnet, 'creator-2').key;
    devnet.faults.set({ insufficientFunds: [key.address] });
    const res = await send(key, bodyOf());
    devnet.faults.clear();
    expect(res).toMatchObject({
      status: 402,
      body: { message: expect.stringMatching(/insufficient balance/) },
    });
  });

  it('rejects a provider outside allowed_transfer_addresses with 403', async () => {
    devnet.chain.updateParams((p) => {
      p.transferAgentAccess.allowedTransferAddresses = [devnet.participants[0]!.address];
    });
    const res = await send(account(devnet, 'creator-0').key, bodyOf());
    devnet.chain.updateParams((p) => {
      p.transferAgentAccess.allowedTransferAddresses = [];
    });
    expect(res).toMatchObject({ status: 403, body: { message: 'Transfer Agent not allowed' } });
  });

  it('rejects requests before developer_access_params.until_block_height from other developers', async () => {
    devnet.chain.updateParams((p) => {
      p.developerAccess.untilBlockHeight = devnet.blocks.height + 100n;
    });
    const res = await send(account(devnet, 'creator-0').key, bodyOf());
    devnet.chain.updateParams((p) => {
      p.developerAccess.untilBlockHeight = 0n;
    });
    expect(res).toMatchObject({
      status: 403,
      body: { message: expect.stringMatching(/restricted until block height/) },
    });
  });

  it('rejects invalid content parts and an unserved model with 400', async () => {
    const key = account(devnet, 'creator-0').key;
    const parts = bodyOf({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
    });
    expect((await send(key, parts)).status).toBe(400);
    expect((await send(key, bodyOf({ model: 'no/such-model' }))).status).toBe(400);
  });
});

describe('direct inference with the raw-body scheme', () => {
  let devnet: Devnet;

  beforeAll(async () => {
    devnet = await startTestDevnet({ directSigningScheme: 'raw-body' });
  });
  afterAll(() => devnet.close());

  it('verifies raw-body signatures and rejects body-sha256 ones', async () => {
    const key = account(devnet, 'creator-0').key;
    const host = devnet.participants[0]!;
    const post = (scheme: DirectSigningScheme, timestampNs: bigint) =>
      fetch(`${host.inferenceUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: signedHeaders(key, bodyOf(), { provider: host.address, timestampNs, scheme }),
        body: bodyOf(),
      });
    expect((await post('raw-body', devnet.blocks.timeNs)).status).toBe(200);
    expect((await post('body-sha256', devnet.blocks.timeNs + 1n)).status).toBe(401);
  });
});
