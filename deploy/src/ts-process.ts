// Starts one of the gateway's TypeScript entry points as its own process, the way production runs
// it (tsx with the `source` export condition), and controls it: used by ./start and by the
// cross-process tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
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
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', entry], {
    cwd: REPO_ROOT,
    env: { ...base, ...env },
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
