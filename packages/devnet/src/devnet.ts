// startDevnet(): a simulated Gonka network in one process — chain REST, CometBFT RPC, public node,
// one server per host, mock model — with every piece hanging off the returned instance, so several
// devnets can run in one test process.
import { PrivateKey } from '@gonka-gateway/chain';
import type { FastifyInstance } from 'fastify';
import { createChainAccessor, type DevnetChain } from './chain/accessor.js';
import { BlockProducer } from './chain/block-producer.js';
import { type DevnetParams, defaultParams } from './chain/params.js';
import { chainRestRoutes } from './chain/rest-routes.js';
import { ChainState } from './chain/state.js';
import type { DevnetCore, HostIdentity } from './core.js';
import { nowNs } from './encoding.js';
import { Faults } from './faults.js';
import {
  applyGenesis,
  type DevAccount,
  devAccounts,
  genesisParticipants,
  governanceModels,
} from './genesis.js';
import { devnetHostClock } from './host/block-clock.js';
import { type DevshardHostsControl, DownFaultReconciler, devshardHostsControl } from './host/control.js';
import { devshardHostRoutes } from './host/routes.js';
import { DevshardHosts } from './host/session-store.js';
import { createApp, listen } from './http.js';
import { MockModel } from './model/mock-model.js';
import {
  type ConfirmationPocPhase,
  type EpochPhase,
  type EpochStages,
  effectiveEpochAt,
  latestEpochAt,
  phaseAt,
  stagesOf,
  validateEpochParams,
} from './node/epoch-schedule.js';
import { buildNodeApp } from './node/node-server.js';
import { ReplayCache } from './node/replay-cache.js';
import { type DevnetOptions, resolvePorts } from './options.js';
import { ParticipantServer } from './participant/participant-server.js';
import { rpcRoutes } from './rpc/rpc-routes.js';

export interface DevnetParticipant {
  name: string;
  address: string;
  key: PrivateKey;
  warmKey: PrivateKey;
  /** Base URL of the host's server (stable across stop/start). */
  readonly inferenceUrl: string;
  weight: bigint;
  models: readonly string[];
  readonly running: boolean;
  /** Host down: its server stops accepting connections. */
  stop(): Promise<void>;
  /** Host up again, same URL. */
  start(): Promise<void>;
}

export interface DevnetBlocks {
  readonly height: bigint;
  /** Latest block time, ns since the Unix epoch. */
  readonly timeNs: bigint;
  /** Produces `count` blocks now (also while paused); returns the new height. */
  step(count?: number): bigint;
  /** Moves the block clock forward and produces one block at the new time. */
  advanceTime(ms: number): bigint;
  /** Stops timer-driven blocks (the blocksPaused fault). */
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  onBlock(listener: (height: bigint) => void): () => void;
}

export interface DevnetEpochs {
  current(): { effective: bigint; latest: bigint; phase: EpochPhase; stages: EpochStages };
  /** Steps blocks until the effective epoch is `epoch`; returns the new height. */
  advanceTo(epoch: bigint | number): bigint;
  /** Starts (or ends, with null) a confirmation PoC event at the current height. */
  setConfirmationPoc(phase: ConfirmationPocPhase | null): void;
}

export interface Devnet {
  chainId: string;
  urls: { chainRest: string; chainRpc: string; node: string; mlNode: string };
  accounts: DevAccount[];
  participants: DevnetParticipant[];
  chain: DevnetChain;
  blocks: DevnetBlocks;
  epochs: DevnetEpochs;
  faults: Faults;
  model: MockModel;
  /** Devshard hosts: clock, per-host faults, signing key, session replicas (host/control.ts). */
  devshardHosts: DevshardHostsControl;
  /** Everything the servers share; what participant plugins receive. */
  core: DevnetCore;
  close(): Promise<void>;
}

function extraKeys(options: DevnetOptions): PrivateKey[] {
  const keys = (options.extraFundedKeys ?? []).map((k) =>
    typeof k === 'string' ? PrivateKey.fromHex(k) : k,
  );
  const fromEnv = (options.env ?? process.env).DEVSHARD_PRIVATE_KEY;
  if (fromEnv) keys.push(PrivateKey.fromHex(fromEnv));
  return keys;
}

function genesisParams(options: DevnetOptions, accounts: DevAccount[]): DevnetParams {
  const params = defaultParams(accounts.filter((a) => a.allowlisted).map((a) => a.address));
  for (const [key, value] of Object.entries(options.epoch ?? {})) {
    params.epoch[key as keyof DevnetParams['epoch']] = BigInt(value);
  }
  options.params?.(params);
  validateEpochParams(params.epoch);
  return params;
}

export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const bindHost = options.host ?? '127.0.0.1';
  const chainId = options.chainId ?? 'gonka-devnet';
  const faults = new Faults();
  const accounts = devAccounts(extraKeys(options));
  const participants = genesisParticipants();
  const chain = new ChainState(chainId, faults, genesisParams(options, accounts));
  applyGenesis(chain, accounts, participants);
  const blocks = new BlockProducer(chain, nowNs());
  const model = new MockModel(options.modelLatency);
  const ports = resolvePorts(options.ports, participants.length);

  const hosts: HostIdentity[] = participants.map((p) => ({
    name: p.name,
    address: p.key.address,
    key: p.key,
    warmKey: p.warmKey,
    weight: p.weight,
    models: p.models,
    inferenceUrl: '',
  }));
  const servers = new Map<string, ParticipantServer>();
  const core: DevnetCore = {
    chainId,
    chain,
    blocks,
    faults,
    model,
    governanceModels: governanceModels(),
    directScheme: options.directSigningScheme ?? 'body-sha256',
    hosts,
    confirmationPoc: null,
    devshardHosts: new DevshardHosts(
      chain,
      devnetHostClock(blocks),
      hosts,
      options.devshardHosts === false ? {} : options.devshardHosts,
    ),
    logger: options.logger ?? false,
    setHostRunning: async (address, running) => {
      const server = servers.get(address);
      if (!server) throw new Error(`unknown host ${address}`);
      await (running ? server.start() : server.stop());
    },
  };

  const plugins = [
    ...(options.devshardHosts === false ? [] : [devshardHostRoutes]),
    ...(options.participantPlugins ?? []),
  ];
  const reconciler = new DownFaultReconciler(core, faults);
  const apps: FastifyInstance[] = [];
  try {
    const replays = hosts.map(() => new ReplayCache());
    for (const [i, host] of hosts.entries()) {
      const server = new ParticipantServer(
        core,
        host,
        replays[i]!,
        plugins,
        bindHost,
        ports.participants[i]!,
      );
      servers.set(host.address, server);
      await server.start();
    }
    const restApp = createApp(core.logger);
    apps.push(restApp);
    await restApp.register(chainRestRoutes, { core });
    const rpcApp = createApp(core.logger);
    apps.push(rpcApp);
    await rpcApp.register(rpcRoutes, { core });
    // The public node is host-0's API, so it shares host-0's replay cache.
    const nodeApp = await buildNodeApp(core, replays[0]!);
    apps.push(nodeApp);
    const urls = {
      chainRest: await listen(restApp, bindHost, ports.chainRest),
      chainRpc: await listen(rpcApp, bindHost, ports.chainRpc),
      node: await listen(nodeApp, bindHost, ports.node),
      mlNode: '',
    };
    urls.mlNode = `${urls.node}/devnet/mlnode`;
    blocks.startTimer(options.blockIntervalMs ?? 1000);
    return assemble(
      core,
      urls,
      accounts,
      servers,
      apps,
      createChainAccessor(chain, blocks, faults),
      reconciler,
    );
  } catch (err) {
    blocks.stopTimer();
    await reconciler.stop();
    await Promise.allSettled([...apps.map((a) => a.close()), ...[...servers.values()].map((s) => s.stop())]);
    throw err;
  }
}

function assemble(
  core: DevnetCore,
  urls: Devnet['urls'],
  accounts: DevAccount[],
  servers: Map<string, ParticipantServer>,
  apps: FastifyInstance[],
  chain: DevnetChain,
  reconciler: DownFaultReconciler,
): Devnet {
  const { blocks: producer, faults } = core;
  const epochParams = () => core.chain.effectiveParams().epoch;
  const blocks: DevnetBlocks = {
    get height() {
      return producer.latest.height;
    },
    get timeNs() {
      return producer.latest.timeNs;
    },
    step: (count = 1) => producer.step(count).height,
    advanceTime: (ms) => producer.advanceTime(ms).height,
    pause: () => void faults.set({ blocksPaused: true }),
    resume: () => void faults.set({ blocksPaused: undefined }),
    get paused() {
      return faults.settings.blocksPaused === true;
    },
    onBlock: (listener) => producer.onBlock((b) => listener(b.height)),
  };
  const epochs: DevnetEpochs = {
    current: () => {
      const p = epochParams();
      const h = producer.latest.height;
      const latest = latestEpochAt(p, h);
      return { effective: effectiveEpochAt(p, h), latest, phase: phaseAt(p, h), stages: stagesOf(p, latest) };
    },
    advanceTo: (epoch) => {
      const target = BigInt(epoch);
      while (effectiveEpochAt(epochParams(), producer.latest.height) < target) producer.produceBlock();
      return producer.latest.height;
    },
    setConfirmationPoc: (phase) => {
      core.confirmationPoc = phase === null ? null : { phase, triggerHeight: producer.latest.height };
    },
  };
  const participants: DevnetParticipant[] = core.hosts.map((host) => {
    const server = servers.get(host.address)!;
    return {
      name: host.name,
      address: host.address,
      key: host.key,
      warmKey: host.warmKey,
      get inferenceUrl() {
        return host.inferenceUrl;
      },
      weight: host.weight,
      models: host.models,
      get running() {
        return server.running;
      },
      stop: () => server.stop(),
      start: () => server.start(),
    };
  });
  let closed = false;
  return {
    chainId: core.chainId,
    urls,
    accounts,
    participants,
    chain,
    blocks,
    epochs,
    faults,
    model: core.model,
    devshardHosts: devshardHostsControl(core, faults, reconciler),
    core,
    close: async () => {
      if (closed) return;
      closed = true;
      producer.stopTimer();
      await reconciler.stop();
      await Promise.all([...apps.map((a) => a.close()), ...[...servers.values()].map((s) => s.stop())]);
    },
  };
}
