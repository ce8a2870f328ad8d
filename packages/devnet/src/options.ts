// Devnet options and their defaults.
import type { DirectSigningScheme, EpochParams, PrivateKey } from '@gonka-gateway/chain';
import type { DevnetParams } from './chain/params.js';
import type { DevshardHostsOptions } from './host/session-store.js';
import type { MockModelLatency } from './model/mock-model.js';
import type { ParticipantPlugin } from './participant/participant-server.js';

export interface DevnetPorts {
  chainRest: number;
  chainRpc: number;
  node: number;
  /** One per participant, in order; 0 = ephemeral. */
  participants: number[];
}

export const DEFAULT_PORTS: DevnetPorts = {
  chainRest: 1317,
  chainRpc: 26657,
  node: 9000,
  participants: [9101, 9102, 9103, 9104],
};

export interface DevnetOptions {
  /** `default` (1317, 26657, 9000, 9101–9104), `ephemeral` (all 0), or explicit ports over the defaults. */
  ports?: 'default' | 'ephemeral' | Partial<DevnetPorts>;
  /** Bind address; default 127.0.0.1. */
  host?: string;
  /** Default `gonka-devnet`. */
  chainId?: string;
  /** Block timer; 0 = blocks only on blocks.step()/advanceTime(). Default 1000. */
  blockIntervalMs?: number;
  /** Overrides of epoch_params (numbers or bigints). */
  epoch?: Partial<Record<keyof EpochParams, number | bigint>>;
  /** Edits genesis params in place (allowlists, prices, fee groups, …). */
  params?: (params: DevnetParams) => void;
  /** Direct-request signing scheme the node verifies (chain-and-network.md §4.2); default `body-sha256`. */
  directSigningScheme?: DirectSigningScheme;
  /** Mock model latency; default zero (no timers). */
  modelLatency?: Partial<MockModelLatency>;
  /** Keys funded (1,000 GNK) and allowlisted as escrow creators at genesis, pubkey not published. */
  extraFundedKeys?: Array<PrivateKey | string>;
  /** Where DEVSHARD_PRIVATE_KEY is read from (funded and allowlisted when set); default process.env. */
  env?: Record<string, string | undefined>;
  /** Plugins mounted on every participant server, after the devshard host routes. */
  participantPlugins?: ParticipantPlugin[];
  /**
   * Devshard hosts on every participant (default on): `false` leaves them out; `warmKeySigners`
   * lists host names or addresses that sign with their warm key instead of the cold one.
   */
  devshardHosts?: false | DevshardHostsOptions;
  /** Fastify request logging; default false. */
  logger?: boolean;
}

export function resolvePorts(ports: DevnetOptions['ports'], participantCount: number): DevnetPorts {
  if (ports === 'ephemeral') {
    return { chainRest: 0, chainRpc: 0, node: 0, participants: new Array(participantCount).fill(0) };
  }
  const merged = { ...DEFAULT_PORTS, ...(ports === 'default' || ports === undefined ? {} : ports) };
  if (merged.participants.length < participantCount) {
    throw new RangeError(`need ${participantCount} participant ports, got ${merged.participants.length}`);
  }
  return merged;
}
