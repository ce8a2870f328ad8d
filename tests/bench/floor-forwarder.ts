// The least a chat proxy can cost on this machine (gateway-floor.ts): a process that takes
// POST /v1/chat/completions, sends the same bytes to the mock model with undici and answers with what
// came back — no auth, admission, session or store. FLOOR_MODE=fastify serves it through a bare
// Fastify app, FLOOR_MODE=http through node:http alone, so the difference is Fastify's own share.
// FLOOR_MODE=protocol adds, around the same Fastify relay, only the work the devshard protocol and
// the gateway's durability rules make every chat request do (docs/performance.md, "Findings"), with
// the same clients and the same secp256k1 binding as the proxy: one Redis admission script, the
// diff signed (SHA-256 + ECDSA), one Postgres write-ahead statement before the host is called, the
// host request signed, two host signatures recovered (the executor receipt and the Finish), one
// Postgres statement after the answer, and the closing Redis write (release + usage event, one
// socket write). No session state, no JSON beyond the body, no routing: what a perfect
// implementation could not avoid. Under concurrency it shares what the proxy shares: the rows that
// wait while a statement is in flight go in the next one (group commit, architecture §2.3), and
// the Redis commands of one event-loop turn leave in one write; at c=1 nothing waits.
// Env: FLOOR_PORT, FLOOR_UPSTREAM (the mock model's base URL); protocol mode also FLOOR_DATABASE_URL,
// FLOOR_REDIS_URL, FLOOR_REDIS_PREFIX.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { PrivateKey, recoverPublicKey, sha256 } from '@gonka-gateway/chain';
import { GroupCommit } from '@gonka-gateway/escrow-runtime';
import { holdForTurn, openRedis } from '@gonka-gateway/shared';
import Fastify from 'fastify';
import postgres from 'postgres';
import { request } from 'undici';

const port = Number(process.env.FLOOR_PORT);
const upstream = `${process.env.FLOOR_UPSTREAM}/v1/chat/completions`;
const JSON_HEADERS = { 'content-type': 'application/json' };

async function forward(
  body: Buffer,
  headers: Record<string, string> = JSON_HEADERS,
): Promise<{ status: number; body: Buffer }> {
  const res = await request(upstream, { method: 'POST', headers, body });
  return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
}

type Row = Record<string, string | Buffer>;

/**
 * The store's own group commit around a multi-row insert: a row goes at once when no statement is
 * in flight, else with every row that arrives meanwhile in the next one (each row its own key, as
 * the proxy's pipelined diffs of one escrow share a write). Resolves when its statement committed.
 */
function groupCommit(insert: (rows: Row[]) => Promise<unknown>): (row: Row) => Promise<void> {
  const commit = new GroupCommit<Row>({
    key: (row) => String(row.nonce),
    maxBatch: 4_096,
    one: async (row) => {
      await insert([row]);
    },
    many: async (carried) => {
      await insert(carried.map((c) => c.entry));
      for (const c of carried) c.resolve();
    },
  });
  return (row) => commit.submit(row);
}

/** The protocol's per-request work around `forward` (FLOOR_MODE=protocol). */
async function protocolWork(): Promise<(body: Buffer) => Promise<{ status: number; body: Buffer }>> {
  const prefix = process.env.FLOOR_REDIS_PREFIX ?? 'floor:';
  const redis = openRedis(process.env.FLOOR_REDIS_URL ?? 'redis://127.0.0.1:6379', { name: 'floor' });
  // Admission: a ticket into the in-flight set and a counter, refused past a limit (one EVALSHA).
  redis.defineCommand('admit', {
    numberOfKeys: 2,
    lua: `if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
          redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]); redis.call('INCRBY', KEYS[2], ARGV[4]); return 1`,
  });
  redis.defineCommand('release', {
    numberOfKeys: 2,
    lua: `redis.call('ZREM', KEYS[1], ARGV[1]); redis.call('DECRBY', KEYS[2], ARGV[2]); return 1`,
  });
  const sql = postgres(process.env.FLOOR_DATABASE_URL!, { max: 1, onnotice: () => {} });
  await sql`create table if not exists floor_diffs (escrow_id numeric, nonce numeric, txs bytea,
    user_sig bytea, root bytea, prompt bytea, primary key (escrow_id, nonce))`;
  await sql`create table if not exists floor_receipts (escrow_id numeric, nonce numeric, txs bytea,
    primary key (escrow_id, nonce))`;
  const creator = PrivateKey.random();
  // Host signatures to recover: made ahead, so recovering them is the only curve work per request
  // (the proxy's recoveries are of signatures it has never seen).
  const host = PrivateKey.random();
  const hostSigned = Array.from({ length: 4_096 }, () => {
    const digest = sha256(randomBytes(200));
    return { digest, signature: host.signDigest65(digest) };
  });
  const writeAhead = groupCommit((rows) => sql`insert into floor_diffs ${sql(rows)}`);
  const afterAnswer = groupCommit((rows) => sql`insert into floor_receipts ${sql(rows)}`);
  const inflight = `${prefix}inflight`;
  const tokens = `${prefix}tokens`;
  let lastNonce = 0n;
  return async (body) => {
    const ticket = randomUUID();
    const inputTokens = Math.ceil(body.length / 4);
    // The Redis commands of one turn in one write, with the proxy's own per-turn hold.
    holdForTurn(redis);
    const admitted = await (redis as unknown as { admit(...a: unknown[]): Promise<number> }).admit(
      inflight,
      tokens,
      ticket,
      4096,
      Date.now(),
      inputTokens,
    );
    if (admitted !== 1) throw new Error('not admitted');
    // Each request its own nonce: the counter is shared by the requests in flight.
    lastNonce += 1n;
    const nonce = lastNonce;
    // The diff: a Start tx (the prompt's hash), a Confirm and a Finish, signed over their bytes.
    const txs = Buffer.concat([sha256(body), randomBytes(480)]);
    const root = sha256(txs);
    const userSig = creator.signDigest65(sha256(Buffer.concat([txs, root])));
    await writeAhead({
      escrow_id: '1',
      nonce: nonce.toString(),
      txs,
      user_sig: Buffer.from(userSig),
      root: Buffer.from(root),
      prompt: body,
    });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headerSig = creator.signDigest65(sha256(sha256(Buffer.concat([body, Buffer.from(timestamp)]))));
    const answer = await forward(body, {
      ...JSON_HEADERS,
      'x-devshard-signature': Buffer.from(headerSig).toString('hex'),
      'x-devshard-timestamp': timestamp,
    });
    // The executor receipt and the Finish: two recoveries of host signatures.
    for (let k = 0; k < 2; k++) {
      const s = hostSigned[(Number(nonce) * 2 + k) % hostSigned.length]!;
      recoverPublicKey(s.digest, s.signature);
    }
    await afterAnswer({ escrow_id: '1', nonce: nonce.toString(), txs: randomBytes(300) });
    setImmediate(() => {
      // After the answer, as the proxy does: release and usage event in one socket write.
      holdForTurn(redis);
      const pipe = redis.pipeline();
      (pipe as unknown as { release(...a: unknown[]): void }).release(inflight, tokens, ticket, inputTokens);
      pipe.xadd(`${prefix}usage`, 'MAXLEN', '~', '10000', '*', 'ticket', ticket, 'nonce', nonce.toString());
      void pipe.exec();
    });
    return answer;
  };
}

if (process.env.FLOOR_MODE === 'http') {
  createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      forward(Buffer.concat(parts)).then(
        (answer) => res.writeHead(answer.status, JSON_HEADERS).end(answer.body),
        () => res.writeHead(502).end(),
      );
    });
  }).listen(port, '127.0.0.1', () => console.log('listening'));
} else {
  const serve = process.env.FLOOR_MODE === 'protocol' ? await protocolWork() : forward;
  const app = Fastify();
  // The bytes as they came, as the proxy keeps them; Fastify's own JSON parser would also parse them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
  app.post('/v1/chat/completions', async (req, reply) => {
    const answer = await serve(req.body as Buffer);
    return reply.status(answer.status).header('content-type', 'application/json').send(answer.body);
  });
  await app.listen({ port, host: '127.0.0.1' });
  console.log('listening');
}
