// A devnet in a child process for benchmarks (packages/devnet/bench/serve-devnet.ts).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { REPO_ROOT } from '@gonka-gateway/deploy';

export interface DevnetChild {
  urls: { chainRest: string; chainRpc: string; node: string; mlNode: string };
  close(): Promise<void>;
}

export async function startDevnetChild(env: Record<string, string>): Promise<DevnetChild> {
  const child = fork(`${REPO_ROOT}/packages/devnet/bench/serve-devnet.ts`, [], {
    execArgv: ['--import', 'tsx', '--conditions=source'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [message] = (await once(child, 'message')) as [{ urls: DevnetChild['urls'] }];
  return {
    urls: message.urls,
    async close() {
      const exited = once(child, 'exit');
      child.disconnect();
      await exited;
    },
  };
}
