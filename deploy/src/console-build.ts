// The operator console's static files (apps/console/dist) for a run from sources: ./start and the
// browser test run the TypeScript sources with tsx, which never runs `pnpm build`, so they build the
// console themselves when dist is missing or older than its sources (about a second, esbuild), and a
// clean clone serves /console on its first ./start.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './ts-process.js';

export const CONSOLE_BUILD_SCRIPT = join(REPO_ROOT, 'apps/console/build.mjs');

/** Builds the console if it is stale; throws with the build's output when it fails. */
export function ensureConsoleBuilt(): void {
  const run = spawnSync(process.execPath, [CONSOLE_BUILD_SCRIPT, '--if-stale'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (run.status !== 0) {
    throw new Error(`the console build failed (${run.status ?? run.signal}):\n${run.stdout}${run.stderr}`);
  }
}
