// Child process of the benchmarks (model-bench.ts here, tests/bench/*): a devnet on ephemeral ports
// in its own process, so load generator and network do not share an event loop. Sends its URLs to
// the parent over IPC and runs until the parent disconnects.
// Environment: BLOCK_INTERVAL_MS (default 0: manual blocks), MODEL_TTFT_MS, MODEL_PER_TOKEN_MS
// (default 0: zero latency), DEVSHARD_PRIVATE_KEY (funded and allowlisted when set).
import { startDevnet } from '../src/devnet.js';

const env = process.env;
const devnet = await startDevnet({
  ports: 'ephemeral',
  blockIntervalMs: Number(env.BLOCK_INTERVAL_MS ?? 0),
  modelLatency: {
    timeToFirstTokenMs: Number(env.MODEL_TTFT_MS ?? 0),
    perTokenMs: Number(env.MODEL_PER_TOKEN_MS ?? 0),
  },
  env: env.DEVSHARD_PRIVATE_KEY ? { DEVSHARD_PRIVATE_KEY: env.DEVSHARD_PRIVATE_KEY } : {},
});
process.send?.({ urls: devnet.urls });
process.on('disconnect', () => {
  void devnet.close().then(() => process.exit(0));
});
