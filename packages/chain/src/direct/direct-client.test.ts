import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import { sha256, verifyDigest64 } from '../crypto/secp256k1.js';
import { ChainError } from '../errors.js';
import {
  type RecordedRequest,
  sendJson,
  startTestHttpServer,
  type TestHttpServer,
} from '../testing/test-http-server.js';
import { sendDirectRequest, streamDirectRequest } from './direct-client.js';
import { DirectRequestSigner } from './direct-signer.js';
import { directRequestMessage } from './message.js';

const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const PROVIDER = 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p';

/** What a node checks (§4.2–4.4): signature over the exact body received, scheme body-sha256. */
function verifiesLikeANode(req: RecordedRequest): boolean {
  const sig = Buffer.from(String(req.headers.authorization), 'base64');
  const msg = directRequestMessage(
    'body-sha256',
    req.body,
    BigInt(String(req.headers['x-timestamp'])),
    PROVIDER,
  );
  return (
    verifyDigest64(sig, sha256(msg), key.publicKey) && req.headers['x-requester-address'] === key.address
  );
}

describe('direct client over HTTP', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startTestHttpServer((req, res) => {
      if (!verifiesLikeANode(req)) return sendJson(res, 401, { error: 'invalid signature' });
      if (req.path === '/v1/forbidden/chat/completions')
        return sendJson(res, 403, { error: { message: 'Transfer Agent not allowed' } });
      const body = JSON.parse(req.body.toString()) as { stream?: boolean };
      if (!body.stream)
        return sendJson(res, 200, { id: 'c1', choices: [{ message: { role: 'assistant', content: 'Hi' } }] });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"H"}}]}\n\n');
      res.end('data: {"choices":[{"delta":{"content":"i"}}]}\n\ndata: [DONE]\n\n');
    });
  });
  afterAll(() => server.close());

  const endpoint = (path = '') => ({ baseUrl: `${server.url}/v1${path}`, transferAddress: PROVIDER });
  // Irregular spacing on purpose: the bytes must go out exactly as given.
  const body = new TextEncoder().encode('{"model":"m",  "messages":[{"role":"user","content":"Hello!"}]}');

  it('sends exactly the signed bytes with the §4.4 headers and no X-Transfer-Address', async () => {
    const signer = new DirectRequestSigner(key);
    const res = await sendDirectRequest({ endpoint: endpoint(), signer, body });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).choices[0].message.content).toBe('Hi');
    const req = server.requests.at(-1)!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(Buffer.compare(req.body, Buffer.from(body))).toBe(0);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-transfer-address']).toBeUndefined();
    expect(BigInt(String(req.headers['x-timestamp']))).toBe(res.timestampNs);
  });

  it('surfaces a node rejection as CHAIN_ERR_DIRECT_REJECTED with the node message and a hint', async () => {
    const err = (await sendDirectRequest({
      endpoint: endpoint('/forbidden'),
      signer: new DirectRequestSigner(key),
      body,
    }).catch((e: unknown) => e)) as ChainError;
    expect(err).toBeInstanceOf(ChainError);
    expect(err.code).toBe('CHAIN_ERR_DIRECT_REJECTED');
    expect(err.status).toBe(403);
    expect(err.message).toContain('Transfer Agent not allowed');
    expect(err.hint).toMatch(/allowed_transfer_addresses/);
    expect(err.message).not.toContain(String(server.requests.at(-1)!.headers.authorization));
  });

  it('a raw-body signature is refused by a body-sha256 node (schemes are not interchangeable)', async () => {
    const err = (await sendDirectRequest({
      endpoint: endpoint(),
      signer: new DirectRequestSigner(key, { scheme: 'raw-body' }),
      body,
    }).catch((e: unknown) => e)) as ChainError;
    expect([err.code, err.status]).toEqual(['CHAIN_ERR_DIRECT_REJECTED', 401]);
    expect(err.hint).toMatch(/scheme/);
  });

  it('streams SSE events', async () => {
    const streamBody = new TextEncoder().encode('{"model":"m","stream":true,"messages":[]}');
    const stream = await streamDirectRequest({
      endpoint: endpoint(),
      signer: new DirectRequestSigner(key),
      body: streamBody,
    });
    const data: string[] = [];
    for await (const e of stream.events) data.push(e.data);
    expect(data).toEqual([
      '{"choices":[{"delta":{"content":"H"}}]}',
      '{"choices":[{"delta":{"content":"i"}}]}',
      '[DONE]',
    ]);
  });

  it('maps an unreachable endpoint to CHAIN_ERR_UNREACHABLE', async () => {
    const err = (await sendDirectRequest({
      endpoint: { baseUrl: 'http://127.0.0.1:9/v1', transferAddress: PROVIDER },
      signer: new DirectRequestSigner(key),
      body,
    }).catch((e: unknown) => e)) as ChainError;
    expect(err.code).toBe('CHAIN_ERR_UNREACHABLE');
  });
});
