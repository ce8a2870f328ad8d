import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrivateKey } from '@gonka-gateway/chain';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeInferenceRequest,
  encodeMetaEvent,
  encodeReceiptEvent,
  encodeSignaturesResponse,
} from '../json/wire.js';
import { txOf } from '../proto/tx-builders.js';
import { recoverRequestSigner } from '../signing/request.js';
import { HostErrorCode, isHostTransportError } from './errors.js';
import { devshardBaseUrl, HttpHostTransport } from './http-transport.js';
import {
  decodeVerifyTimeoutRequest,
  encodeDiffRecords,
  encodeMempoolResponse,
  encodeVerifyTimeoutResponse,
} from './route-wire.js';
import type { ChatEvent, HostTarget } from './types.js';

const signer = PrivateKey.fromHex('0a'.repeat(32));
const NOW = 1_700_000_000n;
const enc = new TextEncoder();
const dec = new TextDecoder();

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

let server: Server;
let base: string;
let handler: Handler = (_q, res) => {
  res.end();
};
const sockets = new Set<unknown>();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    await handler(req, res, Buffer.concat(parts));
  });
  server.on('connection', (s) => sockets.add(s));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = devshardBaseUrl(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 'v5');
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const target = (): HostTarget => ({ address: 'gonka1host', baseUrl: base });
const transport = (extra: Partial<ConstructorParameters<typeof HttpHostTransport>[0]> = {}) =>
  new HttpHostTransport({ signer, nowSeconds: () => NOW, ...extra });

/** Writes `pieces` as separate socket writes with a pause between them, then ends (or not). */
function sse(pieces: readonly (string | Uint8Array)[], options: { end?: boolean } = {}): Handler {
  return async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    for (const p of pieces) {
      res.write(p);
      await new Promise((r) => setTimeout(r, 2));
    }
    if (options.end !== false) res.end();
  };
}

const receiptLine = (nonce: bigint, extra: { receipt?: boolean } = {}) =>
  `data: ${encodeReceiptEvent({
    nonce,
    stateHash: new Uint8Array(32).fill(7),
    stateSig: new Uint8Array(65).fill(1),
    ...(extra.receipt ? { receipt: new Uint8Array(65).fill(2), confirmedAt: NOW } : {}),
  })}\n\n`;

async function collect(stream: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const out: ChatEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; status?: number; hostError?: string }> {
  try {
    await p;
  } catch (error) {
    if (isHostTransportError(error)) return error;
    throw error;
  }
  throw new Error('expected a HostTransportError');
}

const payload = {
  prompt: enc.encode('{"model":"m","messages":[]}'),
  model: 'm',
  inputLength: 10n,
  maxTokens: 64n,
  startedAt: NOW,
};

describe('HttpHostTransport chat stream (§4.4)', () => {
  it('signs the POST, parses receipt, chunks, meta and [DONE] split across writes, ignores the rest', async () => {
    let seen: { sig?: string; ts?: string; url?: string; body?: Buffer } = {};
    const chunkA = 'data: {"choices":[{"delta":{"content":"hé"}}]}';
    const chunkB = 'data:{"id":"x","note":"mentions \\"devshard_receipt\\" in text"}';
    const finish = txOf.finalizeRound().bytes;
    const stream = `${receiptLine(5n, { receipt: true })}: keep-alive comment\nevent: message\nid: 7\nretry: 100\n${chunkA}\r\n\r\n${chunkB}\n\ndata: ${encodeMetaEvent({ mempool: [finish] })}\n\ndata: [DONE]\n\n`;
    const bytes = enc.encode(stream);
    // Split everywhere, including inside a multi-byte character and between \r and \n.
    const pieces = [3, 40, 41, 90, 200, 201, 260, 261, 300].reduce<Uint8Array[]>((acc, cut, i, cuts) => {
      acc.push(bytes.subarray(i === 0 ? 0 : cuts[i - 1]!, cut));
      if (i === cuts.length - 1) acc.push(bytes.subarray(cut));
      return acc;
    }, []);
    handler = async (req, res, body) => {
      seen = {
        sig: req.headers['x-devshard-signature'] as string,
        ts: req.headers['x-devshard-timestamp'] as string,
        url: req.url,
        body,
      };
      await sse(pieces)(req, res, body);
    };
    const s = await transport().chat(target(), '42', { diffs: [], nonce: 5n, payload, stream: true });
    const events = await collect(s);
    expect(seen.url).toBe('/devshard/v5/sessions/42/chat/completions');
    expect(seen.ts).toBe(String(NOW));
    expect(seen.sig).toMatch(/^[0-9a-f]{130}$/);
    expect(recoverRequestSigner('42', seen.body!, NOW, seen.sig!)).toBe(signer.address);
    expect(decodeInferenceRequest(seen.body!.toString()).payload?.model).toBe('m');
    expect(events.map((e) => e.type)).toEqual(['receipt', 'chunk', 'chunk', 'meta', 'done']);
    const [r, a, b, m, d] = events as [
      Extract<ChatEvent, { type: 'receipt' }>,
      Extract<ChatEvent, { type: 'chunk' }>,
      Extract<ChatEvent, { type: 'chunk' }>,
      Extract<ChatEvent, { type: 'meta' }>,
      Extract<ChatEvent, { type: 'done' }>,
    ];
    expect(r.receipt.nonce).toBe(5n);
    expect(r.receipt.confirmedAt).toBe(NOW);
    expect(r.receipt.receipt).toHaveLength(65);
    expect(dec.decode(a.line)).toBe(chunkA); // exact bytes, \r dropped only as the line terminator
    expect(dec.decode(b.line)).toBe(chunkB);
    expect(m.meta.mempool).toEqual([finish]);
    expect(dec.decode(d.line)).toBe('data: [DONE]');
  });

  it('reads lines above 1 MiB, and refuses a line above the configured bound', async () => {
    const big = `data: {"choices":[{"delta":{"content":"${'x'.repeat(1_500_000)}"}}]}`;
    handler = sse([receiptLine(1n), `${big}\n\n`, 'data: [DONE]\n\n']);
    const events = await collect(await transport().chat(target(), '42', { diffs: [], nonce: 1n }));
    expect(events.map((e) => e.type)).toEqual(['receipt', 'chunk', 'done']);
    expect((events[1] as { line: Uint8Array }).line.length).toBe(big.length);

    // No newline ever: aborts at the bound instead of buffering the whole body.
    handler = sse([receiptLine(1n), `data: ${'y'.repeat(5000)}`, 'y'.repeat(5000)], { end: false });
    const small = transport({ maxLineBytes: 4096 });
    const e = await failure(collect(await small.chat(target(), '42', { diffs: [], nonce: 1n })));
    expect(e.code).toBe(HostErrorCode.LineTooLarge);
  });

  it('detects truncated streams', async () => {
    handler = sse(['data: {"choices":[]}\n\n']);
    let e = await failure(collect(await transport().chat(target(), '42', { diffs: [], nonce: 1n, payload })));
    expect(e.code).toBe(HostErrorCode.Truncated);

    handler = sse([receiptLine(1n, { receipt: true }), 'data: {"choices":[]}\n\n']);
    const events: ChatEvent[] = [];
    e = await failure(
      (async () => {
        for await (const ev of await transport().chat(target(), '42', { diffs: [], nonce: 1n, payload }))
          events.push(ev);
      })(),
    );
    expect(e.code).toBe(HostErrorCode.TruncatedExecution);
    expect(events.map((x) => x.type)).toEqual(['receipt', 'chunk']); // the receipt still reached the caller

    // Without a payload the receipt alone is a complete answer.
    handler = sse([receiptLine(3n)]);
    const ok = await collect(await transport().chat(target(), '42', { diffs: [], nonce: 3n }));
    expect(ok.map((x) => x.type)).toEqual(['receipt']);
  });

  it('rejects a malformed receipt event', async () => {
    handler = sse([
      'data: {"devshard_receipt":{"nonce":1,"state_sig":"not base64!"}}\n\n',
      'data: [DONE]\n\n',
    ]);
    const e = await failure(collect(await transport().chat(target(), '42', { diffs: [], nonce: 1n })));
    expect(e.code).toBe(HostErrorCode.Malformed);
  });

  it('reads the legacy JSON answer', async () => {
    const finish = txOf.finalizeRound().bytes;
    handler = (_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
      res.end(`{"nonce":4,"state_hash":"${b64(new Uint8Array(32))}","mempool":["${b64(finish)}"]}`);
    };
    const events = await collect(await transport().chat(target(), '42', { diffs: [], nonce: 4n }));
    expect(events.map((e) => e.type)).toEqual(['receipt', 'meta']);
    expect((events[0] as { receipt: { nonce: bigint } }).receipt.nonce).toBe(4n);
  });

  it('is cancelled by an AbortSignal mid-stream and by its deadline', async () => {
    handler = sse([receiptLine(1n, { receipt: true }), 'data: {"choices":[]}\n\n'], { end: false });
    const controller = new AbortController();
    const got: string[] = [];
    const e = await failure(
      (async () => {
        const s = await transport().chat(
          target(),
          '42',
          { diffs: [], nonce: 1n, payload },
          { signal: controller.signal },
        );
        for await (const ev of s) {
          got.push(ev.type);
          if (ev.type === 'chunk') controller.abort();
        }
      })(),
    );
    expect(got).toEqual(['receipt', 'chunk']);
    expect(e.code).toBe(HostErrorCode.Aborted);

    const slow = transport({ timeouts: { inferenceMs: 150 } });
    const t = await failure(collect(await slow.chat(target(), '42', { diffs: [], nonce: 1n, payload })));
    expect(t.code).toBe(HostErrorCode.Timeout);
  });
});

describe('HttpHostTransport errors (§4.1)', () => {
  const cases: [number, string | undefined, string][] = [
    [400, undefined, HostErrorCode.BadRequest],
    [401, undefined, HostErrorCode.Unauthorized],
    [403, undefined, HostErrorCode.Forbidden],
    [404, undefined, HostErrorCode.NotFound],
    [409, undefined, HostErrorCode.Conflict],
    [429, 'rate_limited', HostErrorCode.RateLimited],
    [500, undefined, HostErrorCode.ApplyFailed],
    [503, 'requests_disabled', HostErrorCode.Unavailable],
    [502, undefined, HostErrorCode.HttpStatus],
  ];
  it.each(cases)('maps %i to a typed error', async (status, header, code) => {
    handler = (_q, res) => {
      res.writeHead(status, header ? { 'x-devshard-error': header } : {});
      res.end('session not found');
    };
    const e = await failure(transport().chat(target(), '42', { diffs: [], nonce: 1n }));
    expect(e).toMatchObject({ code, status, ...(header ? { hostError: header } : {}) });
    expect(String(e)).not.toContain(signer.exportHex());
  });

  it('reports retryable failures and an unreachable host as network', async () => {
    handler = (_q, res) => {
      res.writeHead(503, { 'x-devshard-error': 'chain_unavailable' });
      res.end();
    };
    const e = await failure(transport().getMempool(target(), '42'));
    expect(e).toMatchObject({
      code: HostErrorCode.Unavailable,
      hostError: 'chain_unavailable',
      retryable: true,
    });
    const dead = await failure(
      transport().getMempool({ address: 'x', baseUrl: 'http://127.0.0.1:1/devshard/v5' }, '42'),
    );
    expect(dead.code).toBe(HostErrorCode.Network);
  });
});

describe('HttpHostTransport JSON routes (§4.2, §4.3)', () => {
  it('verify-timeout, signatures, diffs and mempool', async () => {
    const finish = txOf.finalizeRound().bytes;
    const requests: { url?: string; body: Buffer; sig?: unknown }[] = [];
    handler = (req, res, body) => {
      requests.push({ url: req.url, body, sig: req.headers['x-devshard-signature'] });
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.endsWith('/verify-timeout')) {
        res.end(
          encodeVerifyTimeoutResponse({ accept: true, signature: new Uint8Array(65).fill(3), voterSlot: 4 }),
        );
      } else if (req.url?.includes('/signatures')) {
        res.end(encodeSignaturesResponse(new Map([[2, new Uint8Array(65).fill(9)]])));
      } else if (req.url?.includes('/diffs')) {
        res.end(
          encodeDiffRecords([
            {
              diff: { nonce: 1n, txs: Uint8Array.of(8, 1), userSig: new Uint8Array(65) },
              stateHash: new Uint8Array(32),
            },
          ]),
        );
      } else res.end(encodeMempoolResponse([finish]));
    };
    const t = transport();
    const vote = await t.verifyTimeout(target(), '42', { inferenceId: 3n, reason: 'refused', payload });
    expect(vote).toMatchObject({ accept: true, voterSlot: 4 });
    expect(requests[0]!.sig).toMatch(/^[0-9a-f]{130}$/);
    expect(decodeVerifyTimeoutRequest(requests[0]!.body.toString())).toMatchObject({
      inferenceId: 3n,
      reason: 'refused',
      payload: { model: 'm', startedAt: NOW },
    });
    expect((await t.getSignatures(target(), '42', 7n)).get(2)).toHaveLength(65);
    expect(requests[1]!.url).toBe('/devshard/v5/sessions/42/signatures?nonce=7');
    expect(requests[1]!.sig).toBeUndefined(); // GETs are unsigned
    const diffs = await t.getDiffs(target(), '42', 1n, 1n);
    expect(diffs[0]!.diff.nonce).toBe(1n);
    expect(requests[2]!.url).toBe('/devshard/v5/sessions/42/diffs?from=1&to=1');
    const mempool = await t.getMempool(target(), '42');
    expect(mempool[0]!.tx.kind).toBe('finalizeRound');
    expect(mempool[0]!.bytes).toEqual(finish);
  });

  it('reuses one keep-alive connection across calls', async () => {
    handler = (_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(encodeMempoolResponse([]));
    };
    const t = transport();
    // undici's pool may open a second connection for a call sent in the same turn the previous one
    // is released (its `drain` comes a tick later); from then on calls reuse the open ones.
    await t.getMempool(target(), '42');
    await t.getMempool(target(), '42');
    const before = sockets.size;
    for (let i = 0; i < 5; i++) await t.getMempool(target(), '42');
    handler = sse([receiptLine(1n)]);
    await collect(await t.chat(target(), '42', { diffs: [], nonce: 1n }));
    expect(sockets.size).toBe(before);
  });
});

describe('HttpHostTransport on the dispatcher: edges of a read (§4.4, §4.5)', () => {
  it('cancel() mid-body stops the read with `aborted`, and the transport goes on working', async () => {
    handler = sse([receiptLine(1n, { receipt: true }), 'data: {"choices":[]}\n\n'], { end: false });
    const t = transport();
    const s = await t.chat(target(), '42', { diffs: [], nonce: 1n, payload });
    const got: string[] = [];
    const e = await failure(
      (async () => {
        for await (const ev of s) {
          got.push(ev.type);
          if (ev.type === 'chunk') s.cancel(); // what ClientWatch does when the tail runs out
        }
      })(),
    );
    expect(got).toEqual(['receipt', 'chunk']);
    expect(e.code).toBe(HostErrorCode.Aborted);
    handler = sse([receiptLine(2n)]);
    expect(
      (await collect(await t.chat(target(), '42', { diffs: [], nonce: 2n }))).map((x) => x.type),
    ).toEqual(['receipt']);
  });

  it('a caller signal aborted before the call fails it with `aborted`', async () => {
    handler = sse([receiptLine(1n)]);
    const e = await failure(
      transport().chat(target(), '42', { diffs: [], nonce: 1n }, { signal: AbortSignal.abort() }),
    );
    expect(e.code).toBe(HostErrorCode.Aborted);
  });

  it('a host closing mid-stream is a truncation; what arrived before still reaches the reader', async () => {
    const cut =
      (pieces: string[]): Handler =>
      async (req, res, body) => {
        await sse(pieces, { end: false })(req, res, body);
        res.socket?.destroy();
      };
    handler = cut([receiptLine(1n, { receipt: true }), 'data: {"choices":[]}\n\n']);
    const got: string[] = [];
    let e = await failure(
      (async () => {
        for await (const ev of await transport().chat(target(), '42', { diffs: [], nonce: 1n, payload }))
          got.push(ev.type);
      })(),
    );
    expect(e.code).toBe(HostErrorCode.TruncatedExecution);
    expect(got).toEqual(['receipt', 'chunk']);

    handler = cut(['data: {"choices":[]}\n\n']);
    e = await failure(collect(await transport().chat(target(), '42', { diffs: [], nonce: 1n, payload })));
    expect(e.code).toBe(HostErrorCode.Truncated);
  });

  it('deadlines: the transport timer before the head is `timeout`; undici headers and idle-body timeouts', async () => {
    const silent: Handler = () => new Promise<void>(() => {}); // never answers
    handler = silent;
    let e = await failure(
      transport({ timeouts: { protocolMs: 100 } }).chat(target(), '42', { diffs: [], nonce: 1n }),
    );
    expect(e.code).toBe(HostErrorCode.Timeout);

    // The dispatcher's own headers timeout: no HTTP answer, a network failure as with request().
    e = await failure(
      transport({ dispatcher: new Agent({ headersTimeout: 100 }) }).chat(target(), '42', {
        diffs: [],
        nonce: 1n,
      }),
    );
    expect(e.code).toBe(HostErrorCode.Network);

    // An idle body after the receipt of a payload send: the execution was cut.
    handler = sse([receiptLine(1n, { receipt: true })], { end: false });
    const idle = transport({ dispatcher: new Agent({ bodyTimeout: 100 }) });
    e = await failure(collect(await idle.chat(target(), '42', { diffs: [], nonce: 1n, payload })));
    expect(e.code).toBe(HostErrorCode.TruncatedExecution);
  });

  it('pauses the host while the reader lags and resumes it when the reader takes the chunks', async () => {
    const lines = 4000;
    const line = (i: number) =>
      `data: {"choices":[{"delta":{"content":"${String(i).padStart(200, '.')}"}}]}\n\n`;
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(receiptLine(1n));
      for (let i = 0; i < lines; i++) {
        if (!res.write(line(i))) await once(res, 'drain');
      }
      res.end('data: [DONE]\n\n');
    };
    // Records what the transport asks of undici's controller.
    const calls: string[] = [];
    const recording = new Agent().compose(
      (dispatch) => (opts, h) =>
        dispatch(opts, {
          ...h,
          onRequestStart: (controller, context) =>
            h.onRequestStart?.(
              {
                get aborted() {
                  return controller.aborted;
                },
                get paused() {
                  return controller.paused;
                },
                get reason() {
                  return controller.reason;
                },
                abort: (reason) => controller.abort(reason),
                pause: () => {
                  calls.push('pause');
                  controller.pause();
                },
                resume: () => {
                  calls.push('resume');
                  controller.resume();
                },
              },
              context,
            ),
          onResponseStart: (c, ...rest) => h.onResponseStart?.(c, ...rest),
          onResponseData: (c, chunk) => h.onResponseData?.(c, chunk),
          onResponseEnd: (c, trailers) => h.onResponseEnd?.(c, trailers),
          onResponseError: (c, error) => h.onResponseError?.(c, error),
        }),
    );
    const s = await transport({ dispatcher: recording }).chat(target(), '42', { diffs: [], nonce: 1n });
    // Not read until the transport has held the host back (the test's timeout bounds the wait).
    while (!calls.includes('pause')) await new Promise((r) => setTimeout(r, 5));
    const events = await collect(s);
    expect(calls).toContain('resume');
    expect(events.length).toBe(lines + 2);
    expect(events[0]!.type).toBe('receipt');
    expect(events.at(-1)!.type).toBe('done');
    const chunks = events.slice(1, -1) as Extract<ChatEvent, { type: 'chunk' }>[];
    expect(chunks.map((c) => dec.decode(c.line))).toEqual(chunks.map((_c, i) => line(i).slice(0, -2)));
  });

  it('reads through a fetch as well (same events, same errors)', async () => {
    handler = sse([receiptLine(1n, { receipt: true }), 'data: {"choices":[]}\n\n', 'data: [DONE]\n\n']);
    const viaFetch = transport({ fetch });
    const events = await collect(await viaFetch.chat(target(), '42', { diffs: [], nonce: 1n, payload }));
    expect(events.map((e) => e.type)).toEqual(['receipt', 'chunk', 'done']);
    handler = (_q, res) => {
      res.writeHead(503, { 'x-devshard-error': 'initializing' });
      res.end('later');
    };
    const e = await failure(viaFetch.getMempool(target(), '42'));
    expect(e).toMatchObject({ code: HostErrorCode.Unavailable, hostError: 'initializing', status: 503 });
  });
});
