// GET /console: the operator console (apps/console), a static single-page app built at `pnpm build`
// and served from its package's dist folder, so it works offline and with no CDN
// (operator-guide.md §12). The files hold no data and no secret, so they are
// served without the admin key: the page asks for the key, keeps it in the tab's sessionStorage and
// sends it as `Authorization: Bearer` on every admin API call, so the console can do nothing the
// admin API does not let that key do, and every action it takes is in the audit log.
// The page may only talk to this origin and never be framed (content-security-policy).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** apps/console/dist, from src/console/ (tsx) and dist/console/ (compiled) alike. */
export const CONSOLE_DIST = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'console',
  'dist',
);

const SERVED = /^\/(?:index\.html|app\.js|app\.css)?$/;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
} as const;

export async function consoleRoutes(app: FastifyInstance, options: { root?: string } = {}): Promise<void> {
  const root = options.root ?? CONSOLE_DIST;
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(SECURITY_HEADERS);
    return payload;
  });
  if (!existsSync(join(root, 'index.html'))) {
    // A controller started from sources before any build: say how to get the page.
    app.get('/console', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .status(503)
        .type('text/plain; charset=utf-8')
        .send('the console is not built: run `pnpm build` (or `node apps/console/build.mjs`)\n'),
    );
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/console/',
    index: 'index.html',
    // The build's three files only: dist/.types holds the type check's output.
    allowedPath: (path) => SERVED.test(path),
  });
  app.get('/console', { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/console/', 302),
  );
}
