// A ChainClient pointed at a running devnet (its chain REST, RPC and node URLs), as every test and
// harness on the devnet builds it.
import { type ChainClient, createChainClient } from '@gonka-gateway/chain';
import type { Devnet } from './devnet.js';

export function devnetChainClient(devnet: Devnet, options: { timeoutMs?: number } = {}): ChainClient {
  return createChainClient({
    chainRest: devnet.urls.chainRest,
    chainRpc: devnet.urls.chainRpc,
    publicApi: devnet.urls.node,
    timeoutMs: options.timeoutMs ?? 10_000,
  });
}
