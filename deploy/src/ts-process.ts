// Starts one of the gateway's TypeScript entry points as its own process and controls it: used by
// ./start, the cross-process tests and the benchmarks. By default from source (tsx with the `source`
// export condition), as ./start runs it; the benchmarks can run it as the image does instead
// (`runtime: 'compiled'`).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface TsProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface TsProcessOptions {
  /** Called with each chunk of output, e.g. to print it with a prefix. */
  onOutput?: (chunk: string) => void;
  /** Inherit this process's environment (default false: only PATH and HOME, plus `env`). */
  inheritEnv?: boolean;
  /**
   * 'source' (default): the TypeScript through tsx. 'compiled': as deploy/Dockerfile runs it, the
   * entry's JavaScript in its package's dist folder with NODE_ENV=production; an entry outside a
   * package's src (a bench script) runs with Node's own type stripping, importing the packages'
   * compiled output. Needs `buildCompiled()` first.
   */
  runtime?: 'source' | 'compiled';
}

/** The node arguments that run `entry` (relative to the repository root) in `runtime`. */
export function nodeArgsFor(entry: string, runtime: 'source' | 'compiled' = 'source'): string[] {
  if (runtime === 'source') return ['--conditions=source', '--import', 'tsx', entry];
  const inPackage = /^(apps|packages)\/[^/]+\/src\/.+\.ts$/.test(entry);
  return [inPackage ? entry.replace('/src/', '/dist/').replace(/\.ts$/, '.js') : entry];
}

/**
 * Compiles every package and app as the image build does (tsconfig.build.json, incremental: a
 * few seconds when nothing changed), so that `runtime: 'compiled'` runs the current source.
 */
export function buildCompiled(): void {
  const bin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const tsc = spawnSync(process.execPath, [bin, '-b', 'tsconfig.build.json'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (tsc.status !== 0) throw new Error(`tsc -b tsconfig.build.json failed:\n${tsc.stdout}${tsc.stderr}`);
}

/** A spawned child's output (stdout and stderr as one text) and its exit (code, or signal name). */
export function watchChild(
  child: ChildProcess,
  onOutput?: (chunk: string) => void,
): { output(): string; exited: Promise<number | string> } {
  let text = '';
  const collect = (d: Buffer) => {
    const chunk = String(d);
    text += chunk;
    onOutput?.(chunk);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  return { output: () => text, exited };
}

export function startTsProcess(
  entry: string,
  env: Record<string, string>,
  options: TsProcessOptions = {},
): TsProcess {
  const base = options.inheritEnv
    ? process.env
    : { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' };
  const compiled = options.runtime === 'compiled' ? { NODE_ENV: 'production' } : {};
  const child = spawn(process.execPath, nodeArgsFor(entry, options.runtime), {
    cwd: REPO_ROOT,
    env: { ...base, ...compiled, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { output, exited } = watchChild(child, options.onOutput);
  return {
    child,
    output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Polls a URL until it answers with the expected status; fails fast if the process exits. */
export async function waitForHttp(
  url: string,
  proc: TsProcess,
  expected = 200,
  timeoutMs = 30_000,
): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`process exited early:\n${proc.output()}`);
    try {
      const res = await fetch(url);
      if (res.status === expected) return res;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
