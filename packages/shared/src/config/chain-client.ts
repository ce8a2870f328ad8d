// The chain client of a gateway process, from its validated configuration (spec §2.10 chain
// endpoints): one place for which base URL serves what, so the proxy and the controller agree.
import { type ChainClient, createChainClient } from '@gonka-gateway/chain';
import type { GatewayConfig } from './load-config.js';

export function chainClientFor(config: GatewayConfig, options: { timeoutMs?: number } = {}): ChainClient {
  return createChainClient({
    chainRest: config.chain.restUrl,
    txQueryRest: config.chain.txQueryRestUrl,
    publicApi: config.chain.publicApiUrl,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}
