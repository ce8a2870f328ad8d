// The clock devshard hosts read for confirmed_at and the timeout deadlines (devshard-protocol.md
// §7.4) and for the ±30 s request-timestamp window (§4.1). It is the devnet clock: wall clock plus
// whatever `blocks.advanceTime` added, never behind the latest block. A gateway on the wall clock
// therefore agrees with the hosts until a test moves time; a test that moves time injects
// `devnet.devshardHosts.nowSeconds` as the gateway's clock.
import type { BlockProducer } from '../chain/block-producer.js';

export interface HostClock {
  /** Unix seconds (int64). */
  nowSeconds(): bigint;
}

const NS_PER_S = 1_000_000_000n;

export function devnetHostClock(blocks: BlockProducer): HostClock {
  return { nowSeconds: () => blocks.clockNs() / NS_PER_S };
}
