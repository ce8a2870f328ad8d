// Shared setup of the devshard-devnet acceptance tests: the REAL gateway-side session (UserSession over
// HttpHostTransport) against the REAL devnet hosts and chain. One devnet per test file on ephemeral
// ports; escrows are created with a signed tx from creator-0, read back with queryEscrow and turned
// into the session's record; hosts are found under each participant's inference_url from the node's
// participants list (chain-and-network.md §3.3, devshard-protocol.md §4.1).
import {
  type ChainClient,
  connectTxSigner,
  type DevshardEscrow,
  findEscrowCreatedEvents,
  type InferenceParams,
  queryEscrow,
  queryInferenceParams,
  queryParticipants,
  type TxSigner,
} from '@gonka-gateway/chain';
import {
  type DevAccount,
  type Devnet,
  type DevnetOptions,
  devnetChainClient,
  GNK,
  type HostSession,
  QWEN_MODEL,
  startDevnet,
} from '@gonka-gateway/devnet';
import {
  type Clock,
  devshardBaseUrl,
  type HostTransport,
  HttpHostTransport,
  InMemorySessionStore,
  runtimeVersionFor,
  type SessionEvent,
  type SessionRecord,
  sessionRecordFromChain,
  systemClock,
  UserSession,
  type UserSessionOptions,
} from '@gonka-gateway/devshard/session';
import { expect } from 'vitest';
import { broadcastIncluded } from './chain-tx.js';

/**
 * Blocks every 50 ms keep the chain moving for broadcastAndWait. Epochs of 4 000 blocks (~200 s) keep
 * an escrow inside its settle window (its epoch or the next, chain-and-network.md §2.6 Settle 9) for
 * the whole file, while `epochs.advanceTo` can still reach the next epoch in one call.
 */
export function startSessionDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  return startDevnet({
    ports: 'ephemeral',
    blockIntervalMs: 50,
    env: {},
    epoch: { epochLength: 4_000 },
    ...options,
  });
}

/** The devnet clock (wall clock + every advanceTime), which the hosts read: the session's clock. */
export function devnetClock(devnet: Devnet): Clock {
  return {
    nowMs: () => Number(devnet.core.blocks.clockNs() / 1_000_000n),
    nowSeconds: () => devnet.devshardHosts.nowSeconds(),
    sleep: systemClock.sleep,
  };
}

export function account(devnet: Devnet, name: string): DevAccount {
  const found = devnet.accounts.find((a) => a.name === name);
  if (!found) throw new Error(`no dev account ${name}`);
  return found;
}

/** Slot ids by validator address, in slot order of first appearance (§1: one address, many slots). */
export type Group = ReadonlyMap<string, readonly number[]>;

export function groupOf(slots: readonly string[]): Group {
  const group = new Map<string, number[]>();
  slots.forEach((address, slot) => {
    const list = group.get(address) ?? [];
    list.push(slot);
    group.set(address, list);
  });
  return group;
}

/** ⌊2S/3⌋ + 1 slots (devshard-protocol.md §8.2, chain-and-network.md §2.6 Settle 6). */
export const quorumSlots = (slotCount: number) => Math.floor((2 * slotCount) / 3) + 1;

/** Accept weight a timeout needs: > ⌊N × factor / 100⌋ (§5.2, §5.4). */
export const timeoutWeightNeeded = (row: DevshardEscrow) =>
  Math.floor((row.slots.length * row.voteThresholdFactor) / 100) + 1;

/** A host the others can outvote: its slots leave more than vote_threshold to the rest (§5.4). */
export const outvotableHost = (g: Group) => smallestHost(g, 7);

/** For `gateway.escrow`: a group of two hosts or more with a host the others can outvote. */
export function hasOutvotableHost(g: Group, row: DevshardEscrow): boolean {
  const host = outvotableHost(g);
  return g.size >= 2 && host !== undefined && 16 - g.get(host)!.length >= timeoutWeightNeeded(row);
}

/** One escrow of a test: its chain row, the session record, a store and every session event. */
export class TestEscrow {
  readonly store = new InMemorySessionStore();
  readonly events: SessionEvent[] = [];
  readonly group: Group;

  constructor(
    readonly gateway: Gateway,
    readonly row: DevshardEscrow,
    readonly record: SessionRecord,
  ) {
    this.group = groupOf(row.slots);
  }

  get id(): bigint {
    return this.row.id;
  }

  get slots(): readonly string[] {
    return this.row.slots;
  }

  /** Distinct validator addresses of the group. */
  get hosts(): string[] {
    return [...this.group.keys()];
  }

  slotCount(address: string): number {
    return this.group.get(address)?.length ?? 0;
  }

  /** Cold address executing nonce `n` (slot n mod N, §1). */
  executorOf(nonce: bigint): string {
    return this.row.slots[Number(nonce % BigInt(this.row.slots.length))]!;
  }

  nameOf(address: string): string {
    return this.gateway.devnet.participants.find((p) => p.address === address)?.name ?? address;
  }

  /**
   * Opens the gateway-side session on this escrow's store (each open takes the session: the store
   * mints the next fencing token), on the devnet clock, over HttpHostTransport (optionally wrapped to
   * observe or break sends).
   */
  open({
    wrapTransport,
    ...extra
  }: Partial<UserSessionOptions> & {
    wrapTransport?: (transport: HostTransport) => HostTransport;
  } = {}): Promise<UserSession> {
    const { gateway } = this;
    const clock = devnetClock(gateway.devnet);
    const signer = gateway.creator.key;
    const http = new HttpHostTransport({ signer, nowSeconds: clock.nowSeconds });
    return UserSession.open({
      store: this.store,
      escrowId: this.id,
      signer,
      transport: wrapTransport ? wrapTransport(http) : http,
      resolveHost: (address, version) => {
        const url = gateway.hostUrls.get(address);
        return url === undefined ? undefined : { address, baseUrl: devshardBaseUrl(url, version) };
      },
      clock,
      maxNonce: gateway.params.devshardEscrow.maxNonce,
      onEvent: (event) => this.events.push(event),
      ...extra,
    });
  }

  /** Events of one type, typed. */
  eventsOf<T extends SessionEvent['type']>(type: T): Extract<SessionEvent, { type: T }>[] {
    return this.events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
  }

  /** The host's replica of this session (bound on first contact). */
  hostSession(address: string): HostSession {
    const session = this.gateway.devnet.devshardHosts.session(address, this.id);
    if (!session) throw new Error(`host ${this.nameOf(address)} has no session ${this.id}`);
    return session;
  }

  /** Every listed host holds the session's latest nonce with the same root (§7.2 step 1). */
  expectHostsInSync(session: UserSession, addresses: readonly string[] = this.hosts): void {
    const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : undefined);
    for (const address of addresses) {
      const replica = this.hostSession(address);
      expect({
        host: this.nameOf(address),
        nonce: replica.latestNonce,
        root: hex(replica.state.root),
      }).toEqual({ host: this.nameOf(address), nonce: session.latestNonce, root: hex(session.state.root) });
    }
  }
}

/**
 * A diff's tx kinds without the hosts' validations and votes (devnet hosts validate at the
 * escrow's validation_rate): those ride in whichever diff comes next, so a test that checks what the
 * session itself sent leaves them out.
 */
export const withoutValidations = (kinds: readonly string[]) =>
  kinds.filter((k) => k !== 'validation' && k !== 'validationVote');

/** The gateway's side of one devnet: chain client, creator-0's tx signer, params, host URLs. */
export class Gateway {
  private constructor(
    readonly devnet: Devnet,
    readonly client: ChainClient,
    readonly params: InferenceParams,
    readonly signer: TxSigner,
    readonly creator: DevAccount,
    readonly hostUrls: ReadonlyMap<string, string>,
  ) {}

  static async start(options: DevnetOptions = {}): Promise<Gateway> {
    const devnet = await startSessionDevnet(options);
    try {
      const client = devnetChainClient(devnet);
      const params = await queryInferenceParams(client);
      const creator = account(devnet, 'creator-0');
      // Unordered-tx timeouts follow the devnet clock, which tests move with blocks.advanceTime.
      const clock = devnetClock(devnet);
      const signer = await connectTxSigner(client, creator.key, {
        nowNs: () => BigInt(clock.nowMs()) * 1_000_000n,
      });
      const { participants } = await queryParticipants(client);
      const hostUrls = new Map(participants.map((p) => [p.address, p.inferenceUrl]));
      return new Gateway(devnet, client, params, signer, creator, hostUrls);
    } catch (error) {
      await devnet.close();
      throw error;
    }
  }

  /** Runtime version the escrows bind to (§1, §12 #2). */
  get version(): string {
    return runtimeVersionFor(this.params.devshardEscrow.approvedVersions) ?? 'v5';
  }

  /**
   * Creates escrows (5 GNK, Qwen) until one's slot draw fits the scenario, reads the row back from the
   * chain and builds the session record from it. Slots are drawn from the block app hash (§2.6 Create
   * 6), which differs from run to run, so scenarios that need a group shape ask for it here.
   */
  async escrow(fits: (group: Group, row: DevshardEscrow) => boolean, what: string): Promise<TestEscrow> {
    for (let attempt = 0; attempt < 40; attempt++) {
      const tx = this.signer.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, this.params.fee);
      const outcome = await broadcastIncluded(this.client, tx);
      const [created] = findEscrowCreatedEvents(outcome.events);
      if (!created) throw new Error('create escrow: no devshard_escrow_created event');
      const queried = await queryEscrow(this.client, created.escrowId);
      if (!queried.escrow) throw new Error(`escrow ${created.escrowId} not found after creation`);
      const row = queried.escrow;
      if (!fits(groupOf(row.slots), row)) continue;
      const record = sessionRecordFromChain(row, this.params.devshardEscrow, this.version);
      const escrow = new TestEscrow(this, row, record);
      await escrow.store.create(record);
      return escrow;
    }
    throw new Error(`no escrow with ${what} in 40 draws`);
  }

  close(): Promise<void> {
    return this.devnet.close();
  }
}

/** The address with the fewest slots, at most `max` of them (undefined when none fits). */
export function smallestHost(group: Group, max: number): string | undefined {
  let best: string | undefined;
  for (const [address, slots] of group) {
    if (slots.length <= max && (best === undefined || slots.length < group.get(best)!.length)) best = address;
  }
  return best;
}

/** The participant (stop()/start()) behind an address. */
export function participantOf(devnet: Devnet, address: string) {
  const found = devnet.participants.find((p) => p.address === address);
  if (!found) throw new Error(`no participant ${address}`);
  return found;
}
