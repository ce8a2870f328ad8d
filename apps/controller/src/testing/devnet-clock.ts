// The devnet clock (wall clock + every advanceTime), which the devnet hosts read: sessions the
// controller opens in tests must judge timeouts by it.
import type { Devnet } from '@gonka-gateway/devnet';
import { type Clock, systemClock } from '@gonka-gateway/devshard/session';

export function devnetSessionClock(devnet: Devnet): Clock {
  return {
    nowMs: () => Number(devnet.core.blocks.clockNs() / 1_000_000n),
    nowSeconds: () => devnet.devshardHosts.nowSeconds(),
    sleep: systemClock.sleep,
  };
}
