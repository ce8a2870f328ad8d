// The least a chat proxy can cost on this machine (gateway-floor.ts): a process that takes
// POST /v1/chat/completions, sends the same bytes to the mock model with undici and answers with what
// came back — no auth, admission, session or store. FLOOR_MODE=fastify serves it through a bare
// Fastify app, FLOOR_MODE=http through node:http alone, so the difference is Fastify's own share.
// Env: FLOOR_PORT, FLOOR_UPSTREAM (the mock model's base URL).
import { createServer } from 'node:http';
import Fastify from 'fastify';
import { request } from 'undici';

const port = Number(process.env.FLOOR_PORT);
const upstream = `${process.env.FLOOR_UPSTREAM}/v1/chat/completions`;
const JSON_HEADERS = { 'content-type': 'application/json' };

async function forward(body: Buffer): Promise<{ status: number; body: Buffer }> {
  const res = await request(upstream, { method: 'POST', headers: JSON_HEADERS, body });
  return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
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
  const app = Fastify();
  // The bytes as they came, as the proxy keeps them; Fastify's own JSON parser would also parse them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
  app.post('/v1/chat/completions', async (req, reply) => {
    const answer = await forward(req.body as Buffer);
    return reply.status(answer.status).header('content-type', 'application/json').send(answer.body);
  });
  await app.listen({ port, host: '127.0.0.1' });
  console.log('listening');
}
