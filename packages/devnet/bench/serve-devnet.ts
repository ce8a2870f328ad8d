// Child process of model-bench.ts: a devnet on ephemeral ports, zero model latency, manual blocks.
// Sends its URLs to the parent over IPC and runs until the parent disconnects.
import { startDevnet } from '../src/devnet.js';

const devnet = await startDevnet({ ports: 'ephemeral', blockIntervalMs: 0, env: {} });
process.send?.({ urls: devnet.urls });
process.on('disconnect', () => {
  void devnet.close().then(() => process.exit(0));
});
