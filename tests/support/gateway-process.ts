// Starts a gateway process (proxy, controller, devnet…) exactly as `pnpm start` does — TypeScript
// through tsx with the `source` export condition — and controls it from a test.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface RunningProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export function startProcess(entry: string, env: Record<string, string>): RunningProcess {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', entry], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout?.on('data', (d) => {
    text += String(d);
  });
  child.stderr?.on('data', (d) => {
    text += String(d);
  });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  return {
    child,
    output: () => text,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Polls a URL until it answers with the expected status (the process is ready). */
export async function waitForHttp(url: string, proc: RunningProcess, expected = 200, timeoutMs = 20_000) {
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

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}
