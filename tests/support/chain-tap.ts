// An HTTP tap in front of the devnet's chain REST for crash tests of real processes: every request
// passes through unchanged and each broadcast's tx hash is recorded, and a test can arm the next
// broadcast — once the chain has taken the tx, run an action (SIGKILL the controller by pid) and
// cut the answer, so the sender never learns the outcome — or keep the tx index dark (404) so a
// sent tx cannot be looked up. Nothing in production code knows about it.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TappedBroadcast {
  /** Upper-case hex SHA-256 of the tx bytes: the chain's tx hash. */
  txHash: string;
  /** What the chain answered (HTTP status); the caller may never have seen it. */
  status: number;
}

export interface ChainTap {
  readonly url: string;
  readonly broadcasts: readonly TappedBroadcast[];
  /**
   * The next broadcast is forwarded; once the chain has answered, `action` runs, then the
   * connection is destroyed without the answer. Resolves with that broadcast after the action.
   */
  cutNextBroadcast(action?: () => void | Promise<void>): Promise<TappedBroadcast>;
  /** While on, GET of a tx by hash answers 404 (the index does not know it yet). */
  darkenTxIndex(on: boolean): void;
  close(): Promise<void>;
}

const BROADCAST = '/cosmos/tx/v1beta1/txs';

async function body(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

export async function startChainTap(upstream: string): Promise<ChainTap> {
  const base = upstream.replace(/\/$/, '');
  const broadcasts: TappedBroadcast[] = [];
  let armed: { action: () => void | Promise<void>; done: (b: TappedBroadcast) => void } | undefined;
  let dark = false;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    const payload = req.method === 'GET' || req.method === 'HEAD' ? undefined : await body(req);
    if (dark && req.method === 'GET' && path.startsWith(`${BROADCAST}/`)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"code":5,"message":"tx not found"}');
      return;
    }
    const answer = await fetch(`${base}${path}`, {
      method: req.method ?? 'GET',
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      ...(payload ? { body: payload } : {}),
    });
    const text = Buffer.from(await answer.arrayBuffer());
    if (req.method === 'POST' && path === BROADCAST && payload) {
      const txBytes = Buffer.from(
        (JSON.parse(payload.toString()) as { tx_bytes: string }).tx_bytes,
        'base64',
      );
      const seen = {
        txHash: createHash('sha256').update(txBytes).digest('hex').toUpperCase(),
        status: answer.status,
      };
      broadcasts.push(seen);
      const cut = armed;
      armed = undefined;
      if (cut) {
        await cut.action();
        res.socket?.destroy();
        cut.done(seen);
        return;
      }
    }
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    res.end(text);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    broadcasts,
    cutNextBroadcast: (action = () => undefined) =>
      new Promise<TappedBroadcast>((done) => {
        armed = { action, done };
      }),
    darkenTxIndex(on) {
      dark = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
