// The typed object every devnet server and plugin works from: chain state, block clock, faults,
// epochs, the mock model. One per devnet; nothing is module-level.
import type { DirectSigningScheme } from '@gonka-gateway/chain';
import type { BlockProducer } from './chain/block-producer.js';
import type { ChainState } from './chain/state.js';
import type { Faults } from './faults.js';
import type { GovernanceModel } from './genesis.js';
import type { HostIdentity } from './host/host-identity.js';
import type { DevshardHosts } from './host/session-store.js';
import type { MockModel } from './model/mock-model.js';
import type { ConfirmationPocPhase } from './node/epoch-schedule.js';

export interface ConfirmationPocEvent {
  phase: ConfirmationPocPhase;
  triggerHeight: bigint;
}

export type { HostIdentity } from './host/host-identity.js';

export interface DevnetCore {
  chainId: string;
  chain: ChainState;
  blocks: BlockProducer;
  faults: Faults;
  model: MockModel;
  governanceModels: GovernanceModel[];
  directScheme: DirectSigningScheme;
  hosts: HostIdentity[];
  /** Confirmation PoC switched on by a test or the admin route (§3.3); null = none. */
  confirmationPoc: ConfirmationPocEvent | null;
  /** The devshard hosts' sessions, clock and signing choices (host/); survives host restarts. */
  devshardHosts: DevshardHosts;
  /** Stops or starts one host's server (admin route); set by the devnet. */
  setHostRunning(address: string, running: boolean): Promise<void>;
  logger: boolean;
}
