// A private redis-server on an ephemeral port, for tests that FLUSHALL or restart Redis: the shared
// Redis of the machine is never touched beyond a test's own key prefix.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from '@gonka-gateway/shared/testing';

export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

function started(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += String(d);
      if (out.includes('Ready to accept connections')) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${out}`)));
  });
}

/** `port`: start on that port (e.g. to restart a stopped server where its clients reconnect). */
export async function startPrivateRedis(options: { port?: number } = {}): Promise<PrivateRedis> {
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (await freePort());
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      await started(child);
    } catch (error) {
      if (attempt < 3 && options.port === undefined) continue; // the port was taken in between
      throw error;
    }
    child.stdout?.resume();
    child.stderr?.resume();
    const exited = once(child, 'exit');
    return {
      url: `redis://127.0.0.1:${port}`,
      port,
      pid: child.pid!,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
    };
  }
}
