// Entry point of an owner node process (see owner-node.ts), configured by environment variables:
// OWNER_DATABASE_URL, OWNER_REDIS_URL, OWNER_KEY_PREFIX, OWNER_LEASE_TTL_MS, OWNER_PUBLIC_API,
// optional OWNER_REPLICA_ID, OWNER_SENT_DIFF_LOG, OWNER_FLUSH_IDLE_MS; the creator key in
// DEVSHARD_PRIVATE_KEY. Prints `OWNER_NODE_READY <url> <replicaId>` once it serves; SIGTERM drains.
import { startOwnerNode } from './owner-node.js';

const env = process.env;
const need = (name: string): string => {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

const node = await startOwnerNode({
  databaseUrl: need('OWNER_DATABASE_URL'),
  redisUrl: need('OWNER_REDIS_URL'),
  keyPrefix: need('OWNER_KEY_PREFIX'),
  leaseTtlMs: Number(need('OWNER_LEASE_TTL_MS')),
  publicApi: need('OWNER_PUBLIC_API'),
  env,
  ...(env.OWNER_REPLICA_ID ? { replicaId: env.OWNER_REPLICA_ID } : {}),
  ...(env.OWNER_SENT_DIFF_LOG ? { sentDiffLog: env.OWNER_SENT_DIFF_LOG } : {}),
  ...(env.OWNER_FLUSH_IDLE_MS ? { flushIdleMs: Number(env.OWNER_FLUSH_IDLE_MS) } : {}),
  ...(env.OWNER_LOG_LEVEL ? { logLevel: env.OWNER_LOG_LEVEL } : {}),
});
process.stdout.write(`OWNER_NODE_READY ${node.url} ${node.replicaId}\n`);

let closing = false;
process.on('SIGTERM', () => {
  if (closing) return;
  closing = true;
  void node.close().finally(() => process.exit(0));
});
