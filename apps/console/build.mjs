// Builds the operator console into dist/ (served by the controller at /console, apps/controller
// src/console/console-plugin.ts): one esbuild bundle of src/main.tsx (Preact + uPlot, JS and CSS)
// plus index.html. esbuild, not a dev-server toolchain: the build is one call of about a second,
// so ./start and the browser test can run it whenever dist is missing or older than the sources.
//   node apps/console/build.mjs             build
//   node apps/console/build.mjs --if-stale  build only when dist is missing or out of date
import { copyFile, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
export const CONSOLE_SRC = join(here, 'src');
export const CONSOLE_DIST = join(here, 'dist');

async function newestMtime(path) {
  const s = await stat(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let newest = s.mtimeMs;
  for (const entry of await readdir(path)) newest = Math.max(newest, await newestMtime(join(path, entry)));
  return newest;
}

/** True when dist/ lacks a page or any source (src/, index.html, this script) is newer than it. */
export async function consoleIsStale() {
  const built = await stat(join(CONSOLE_DIST, 'index.html')).then(
    (s) => s.mtimeMs,
    () => undefined,
  );
  if (built === undefined) return true;
  const sources = Math.max(
    await newestMtime(CONSOLE_SRC),
    await newestMtime(join(here, 'index.html')),
    await newestMtime(fileURLToPath(import.meta.url)),
  );
  return sources > built;
}

/** Builds dist/; answers the gzipped size of what a browser downloads, in bytes. */
export async function buildConsole() {
  const { build } = await import('esbuild');
  // Only the served files: dist/.types is tsc's (the type check of src/ in `tsc -b`).
  for (const name of ['index.html', 'app.js', 'app.css']) await rm(join(CONSOLE_DIST, name), { force: true });
  await mkdir(CONSOLE_DIST, { recursive: true });
  await build({
    entryPoints: { app: join(CONSOLE_SRC, 'main.tsx') },
    outdir: CONSOLE_DIST,
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
  });
  // index.html last: its mtime is what consoleIsStale compares against.
  await copyFile(join(here, 'index.html'), join(CONSOLE_DIST, 'index.html'));
  let gzip = 0;
  for (const name of ['index.html', 'app.js', 'app.css']) {
    gzip += gzipSync(await readFile(join(CONSOLE_DIST, name))).length;
  }
  return gzip;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-stale') && !(await consoleIsStale())) process.exit(0);
  const gzip = await buildConsole();
  console.log(`console built: ${CONSOLE_DIST} (${(gzip / 1024).toFixed(1)} KiB gzipped)`);
}
