// A devnet in a child process for benchmarks (packages/devnet/bench/serve-devnet.ts).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import {
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  findEscrowCreatedEvents,
  type PrivateKey,
  queryEscrow,
  queryInferenceParams,
} from '@gonka-gateway/chain';
import { REPO_ROOT } from '@gonka-gateway/deploy';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import {
  runtimeVersionFor,
  type SessionRecord,
  sessionRecordFromChain,
} from '@gonka-gateway/devshard/session';

export interface DevnetChild {
  urls: { chainRest: string; chainRpc: string; node: string; mlNode: string };
  /** The child's pid: its CPU (hosts and mock model) from /proc. */
  pid: number;
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
    pid: child.pid!,
    async close() {
      const exited = once(child, 'exit');
      child.disconnect();
      await exited;
    },
  };
}

/** Opens a 10 GNK escrow for the bench model on the devnet; the session record a store is created with. */
export async function openBenchEscrow(client: ChainClient, creator: PrivateKey) {
  const params = await queryInferenceParams(client);
  const signer = await connectTxSigner(client, creator);
  const tx = signer.prepareCreateEscrow({ amount: 10n * GNK, modelId: QWEN_MODEL }, params.fee);
  const outcome = await broadcastAndWait(client, tx, { intervalMs: 100, timeoutMs: 20_000 });
  if (outcome.status !== 'included') throw new Error(`escrow creation ${outcome.status}`);
  const escrowId = findEscrowCreatedEvents(outcome.events)[0]!.escrowId;
  const row = (await queryEscrow(client, escrowId)).escrow!;
  const version = runtimeVersionFor(params.devshardEscrow.approvedVersions) ?? 'v5';
  const record: SessionRecord = sessionRecordFromChain(row, params.devshardEscrow, version);
  return { escrowId, row, version, record, params };
}
