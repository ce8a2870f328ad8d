// `./start` run the way a user runs it, for the tests that need the whole gateway as it is shipped
// (tests/processes/start-command.test.ts, tests/docs/documented-commands.test.ts): bash ./start in
// its own process group, like a terminal's job, with a fresh shell's environment plus what the test
// chooses, output collected; Ctrl-C is SIGINT to that group. Also the process-tree helpers that
// prove nothing is left behind.
import { execFileSync, spawn } from 'node:child_process';
import { REPO_ROOT, watchChild } from '@gonka-gateway/deploy';

export interface RunningStart {
  child: ReturnType<typeof spawn>;
  exited: Promise<number | string>;
  output(): string;
  /** Ctrl-C in the terminal: SIGINT to the whole foreground process group. */
  interrupt(): Promise<number | string>;
}

export function runStart(env: Record<string, string>): RunningStart {
  const child = spawn('bash', ['./start'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { output, exited } = watchChild(child);
  return {
    child,
    exited,
    output,
    interrupt: () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
      return exited;
    },
  };
}

/** Resolves once ./start printed its ready block, or rejects with its output when it exited first. */
export async function waitForStartReady(start: RunningStart, timeoutMs = 150_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = start.output();
    if (out.includes('Ctrl-C stops everything')) return out;
    if (start.child.exitCode !== null || start.child.signalCode !== null || Date.now() > deadline) {
      throw new Error(`./start did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Pids of every descendant of `pid` (children, grandchildren, …). */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const walk = (p: number) => {
    for (const [child, parent] of table) {
      if (parent === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
