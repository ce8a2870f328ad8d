// Test support: the in-process hosts behind real HTTP routes of devshard-protocol.md
// §4.2, with the wire shapes of §4.3/§4.4 written by this package's own encoders. One node:http server
// serves every host under `/h/{address}/devshard/{version}`. A miniature of what the devnet hosts do.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  decodeInferenceRequest,
  encodeMetaEvent,
  encodeReceiptEvent,
  encodeSignaturesResponse,
} from '../json/wire.js';
import { recoverRequestSigner } from '../signing/request.js';
import { isHostTransportError } from '../transport/errors.js';
import {
  decodeVerifyTimeoutRequest,
  encodeMempoolResponse,
  encodeVerifyTimeoutResponse,
} from '../transport/route-wire.js';
import type { HostTarget } from '../transport/types.js';
import type { InProcessNetwork } from './in-process-hosts.js';

const ROUTE = /^\/h\/([^/]+)\/devshard\/([^/]+)\/sessions\/([0-9]+)\/([a-z-/]+)(?:\?(.*))?$/;
const STATUS: Record<string, number> = { network: 503, apply_failed: 500, unavailable: 503 };

async function body(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

export async function serveHosts(
  net: InProcessNetwork,
  creator: string,
  nowSeconds: () => bigint,
): Promise<{ resolveHost: (address: string, version: string) => HostTarget; close: () => void }> {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const m = ROUTE.exec(req.url ?? '');
    if (!m) return res.writeHead(404).end('not found');
    const [, address, , escrowId, route, query] = m as unknown as string[];
    const target = { address: address!, baseUrl: '' };
    const raw = await body(req);
    if (req.method === 'POST') {
      // §4.1: signed by the escrow creator, timestamp within ±30 s.
      const ts = BigInt(String(req.headers['x-devshard-timestamp'] ?? '0'));
      const sig = String(req.headers['x-devshard-signature'] ?? '');
      const diff = ts > nowSeconds() ? ts - nowSeconds() : nowSeconds() - ts;
      if (diff > 30n || recoverRequestSigner(escrowId!, raw, ts, sig) !== creator) {
        return res.writeHead(403).end('restricted to escrow owner');
      }
    }
    if (route === 'chat/completions') {
      const stream = await net.chat(target, escrowId!, decodeInferenceRequest(raw.toString('utf8')));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for await (const e of stream) {
        if (e.type === 'receipt') res.write(`data: ${encodeReceiptEvent(e.receipt)}\n\n`);
        else if (e.type === 'meta') res.write(`data: ${encodeMetaEvent(e.meta)}\n\n`);
        else res.write(Buffer.concat([e.line, Buffer.from('\n\n')]));
      }
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (route === 'verify-timeout') {
      const vote = await net.verifyTimeout(
        target,
        escrowId!,
        decodeVerifyTimeoutRequest(raw.toString('utf8')),
      );
      return res.end(encodeVerifyTimeoutResponse(vote));
    }
    if (route === 'signatures') {
      const nonce = BigInt(new URLSearchParams(query).get('nonce') ?? '0');
      return res.end(encodeSignaturesResponse(await net.getSignatures(target, escrowId!, nonce)));
    }
    if (route === 'mempool')
      return res.end(encodeMempoolResponse((await net.getMempool(target)).map((t) => t.bytes)));
    return res.end('{}');
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = isHostTransportError(error) ? (STATUS[error.code] ?? 500) : 500;
      if (!res.headersSent)
        res.writeHead(status, status === 503 ? { 'x-devshard-error': 'initializing' } : {});
      res.end(String((error as Error).message));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    resolveHost: (address, version) => ({
      address,
      baseUrl: `http://127.0.0.1:${port}/h/${address}/devshard/${version}`,
    }),
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
