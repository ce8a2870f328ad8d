// An "owner node" for the multi-process ownership tests: the ownership runtime of one replica (lease,
// claim loop, owned sessions on the Postgres store) behind a minimal HTTP endpoint that runs one
// inference on an owned escrow and streams it. The real proxy (apps/proxy) takes the endpoint's place;
// the runtime underneath is the same.
//
//   GET  /owned                 → [{escrowId, modelId, state, fencingToken, nonce, inFlight}]
//   POST /infer?escrow=ID       → SSE: the host's chunk lines, then `event: result` {nonce, status…}
//   POST /infer?model=M         → same on the owned escrow of M with the fewest requests in flight
//   POST /drain?escrow=ID       → hand-off (architecture §2.6); answers once the lease is released
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createChainClient } from '@gonka-gateway/chain';
import { HttpHostTransport, isSessionError, systemClock } from '@gonka-gateway/devshard/session';
import { closeRedis, createLogger, openDatabase, openRedis, redisKeys } from '@gonka-gateway/shared';
import { creatorKeyFromEnv } from '../owned/creator-key.js';
import { HostDirectory } from '../owned/host-directory.js';
import { NotOwnedError } from '../owned/owned-sessions.js';
import { OwnershipRuntime } from '../ownership-runtime.js';
import { PostgresSessionStore } from '../store/postgres-session-store.js';
import { SentDiffLog } from './sent-diff-log.js';

export interface OwnerNodeOptions {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly keyPrefix: string;
  /** Default: owner-<random>. */
  readonly replicaId?: string;
  readonly leaseTtlMs: number;
  /** The node's public API (participants → host URLs). */
  readonly publicApi: string;
  /** Where creator keys are read from (DEVSHARD_PRIVATE_KEY, escrows.signer_key_env). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Append every diff sent to hosts to this file (SentDiffLog). */
  readonly sentDiffLog?: string;
  readonly port?: number;
  readonly maxNonce?: bigint;
  readonly flushIdleMs?: number;
  readonly maintenanceEveryMs?: number;
  readonly logLevel?: string;
}

export interface OwnerNode {
  readonly url: string;
  readonly replicaId: string;
  readonly runtime: OwnershipRuntime;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
};

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(parts));
}

export async function startOwnerNode(options: OwnerNodeOptions): Promise<OwnerNode> {
  const replicaId = options.replicaId ?? `owner-${randomBytes(4).toString('hex')}`;
  const log = createLogger({ level: options.logLevel ?? 'warn', name: replicaId });
  // One pool for the claim loop and the store: the drizzle-wrapped handle the apps have.
  const database = openDatabase(options.databaseUrl, { max: 10, applicationName: replicaId });
  const redis = openRedis(options.redisUrl, { name: replicaId });
  const keys = redisKeys(options.keyPrefix);
  const client = createChainClient({
    chainRest: options.publicApi,
    publicApi: options.publicApi,
    timeoutMs: 10_000,
  });
  const hosts = new HostDirectory({ client, minRefreshMs: 1_000 });
  await hosts.refresh();

  const server = createServer();
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const runtime = new OwnershipRuntime({
    sql: database.sql,
    redis,
    keys,
    replicaId,
    url,
    leaseTtlMs: options.leaseTtlMs,
    store: new PostgresSessionStore(database.sql),
    signerFor: creatorKeyFromEnv(options.env),
    resolveHost: hosts.resolve,
    transportFor: (signer) => {
      const http = new HttpHostTransport({ signer, nowSeconds: systemClock.nowSeconds });
      return options.sentDiffLog ? new SentDiffLog(http, options.sentDiffLog, replicaId) : http;
    },
    session: { ...(options.maxNonce !== undefined ? { maxNonce: options.maxNonce } : {}) },
    ...(options.flushIdleMs !== undefined ? { flushIdleMs: options.flushIdleMs } : {}),
    ...(options.maintenanceEveryMs !== undefined ? { maintenanceEveryMs: options.maintenanceEveryMs } : {}),
    log,
  });

  server.on('request', (req, res) => {
    void handle(req, res).catch((error: Error) => {
      if (!res.headersSent) json(res, 500, { error: error.message });
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', url);
    if (req.method === 'GET' && u.pathname === '/owned') return json(res, 200, runtime.sessions.list());
    if (req.method === 'POST' && u.pathname === '/drain') {
      await runtime.sessions.drain(BigInt(u.searchParams.get('escrow') ?? '0'));
      return json(res, 200, { drained: true });
    }
    if (req.method === 'POST' && u.pathname === '/infer') return infer(u, req, res);
    json(res, 404, { error: 'not found' });
  }

  async function infer(u: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const parsed = JSON.parse(Buffer.from(body).toString('utf8')) as { model: string; max_tokens?: number };
    const named = u.searchParams.get('escrow');
    const escrowId = named ? BigInt(named) : runtime.sessions.pick(parsed.model);
    if (escrowId === undefined) return json(res, 409, { error: `no owned escrow for ${parsed.model}` });
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-escrow-id': escrowId.toString() });
    };
    try {
      const result = await runtime.sessions.infer(
        escrowId,
        {
          body,
          model: parsed.model,
          inputLength: BigInt(body.length),
          maxTokens: BigInt(Math.max(64, parsed.max_tokens ?? 256)),
          stream: true,
        },
        {
          onReceipt: ({ nonce, confirmed }) => {
            start();
            res.write(`event: receipt\ndata: ${JSON.stringify({ nonce: nonce.toString(), confirmed })}\n\n`);
          },
          onChunk: (line) => {
            start();
            res.write(Buffer.concat([line, Buffer.from('\n\n')]));
          },
        },
      );
      start();
      res.end(
        `event: result\ndata: ${JSON.stringify({
          escrowId: escrowId.toString(),
          nonce: result.nonce.toString(),
          status: result.status,
          confirmed: result.confirmed,
          finished: result.finished,
          ...(result.error ? { error: result.error.message } : {}),
        })}\n\n`,
      );
    } catch (error) {
      if (started) {
        res.end(`event: error\ndata: ${JSON.stringify({ error: (error as Error).message })}\n\n`);
        return;
      }
      const status = error instanceof NotOwnedError ? 409 : isSessionError(error) ? 503 : 500;
      json(res, status, {
        error: (error as Error).message,
        code: isSessionError(error) ? error.code : undefined,
      });
    }
  }

  await runtime.start();
  return {
    url,
    replicaId,
    runtime,
    async close() {
      await runtime.close();
      server.closeAllConnections();
      server.close();
      await closeRedis(redis);
      await database.close();
    },
  };
}
