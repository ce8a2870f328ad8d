// Where every devshard host keeps its sessions: one HostStore per host, all in one DevshardHosts per
// devnet (hung off the core, never module-level). Nothing here lives in a Fastify app, so a host
// that is stopped and started again (participant stop()/start(), the `down` fault) comes back with
// every session, root, diff, mempool entry and execution it had: a restart with a durable store.
import type { DevshardEscrowParams, PrivateKey } from '@gonka-gateway/chain';
import { type ApplyContext, isDevshardError, sessionFromEscrow } from '@gonka-gateway/devshard';
import type { ChainState } from '../chain/state.js';
import type { EscrowRow } from '../chain/stores.js';
import type { HostClock } from './block-clock.js';
import type { HostIdentity } from './host-identity.js';
import { RecoveryCache } from './recovery-cache.js';
import { HostSession } from './session.js';

/** Which key a host signs receipts, Finish, votes and state signatures with (§2.4: cold or warm). */
export type SigningKeyChoice = 'cold' | 'warm';

export type SessionLookup =
  | { readonly session: HostSession }
  | { readonly status: 404 | 409 | 503; readonly message: string; readonly devshardError?: string };

/**
 * The session state a host starts from for an escrow row of this chain: config frozen on the row,
 * timeouts from the row when it carries them, else the live params (§5.2, §12 #8).
 */
export function sessionOfRow(row: EscrowRow, version: string, params: DevshardEscrowParams) {
  return sessionFromEscrow(
    {
      escrowId: row.id,
      creator: row.creator,
      amount: row.amount,
      slots: row.slots,
      tokenPrice: row.tokenPrice,
      createDevshardFee: row.createDevshardFee,
      feePerNonce: row.feePerNonce,
      inferenceSealGraceNonces: BigInt(row.inferenceSealGraceNonces),
      inferenceSealGraceSeconds: BigInt(row.inferenceSealGraceSeconds),
      autoSealEveryNNonces: BigInt(row.autoSealEveryNNonces),
      validationRate: row.validationRate,
      voteThresholdFactor: row.voteThresholdFactor,
    },
    {
      tag: version,
      chainParams: {
        refusalTimeout: row.refusalTimeout || params.refusalTimeout,
        executionTimeout: row.executionTimeout || params.executionTimeout,
      },
    },
  ).state;
}

/** One host's sessions by escrow id, and its signing choice. */
export class HostStore {
  readonly sessions = new Map<bigint, HostSession>();
  signingKey: SigningKeyChoice;
  /** Applies with the devnet's shared recovery cache and the chain's warm-key grants (§5.7). */
  readonly applyContext: ApplyContext;

  constructor(
    readonly host: HostIdentity,
    signingKey: SigningKeyChoice,
    applyContext: ApplyContext,
    private readonly recoveries: RecoveryCache,
  ) {
    this.signingKey = signingKey;
    this.applyContext = applyContext;
  }

  get signer(): PrivateKey {
    return this.signingKey === 'warm' ? this.host.warmKey : this.host.key;
  }

  /** Signs Sign(preimage) with the current key and records the signer in the shared recovery cache. */
  sign(preimage: Uint8Array, sign: (key: PrivateKey) => Uint8Array): Uint8Array {
    const key = this.signer;
    const signature = sign(key);
    this.recoveries.remember(preimage, signature, key.address);
    return signature;
  }

  /** The bound session, or 409 when another version bound it; undefined when none is bound. */
  find(escrowId: bigint, version: string): SessionLookup | undefined {
    const session = this.sessions.get(escrowId);
    if (!session) return undefined;
    if (session.version !== version) {
      return { status: 409, message: `session bound to version ${session.version}` };
    }
    return { session };
  }

  /**
   * The session of `row` under `version`, binding it on first contact (§1: the first version that
   * reaches an escrow binds it). Config comes from the row (frozen at creation), the timeouts from
   * the row when it carries them, else from the live params (§5.2, §12 #8).
   */
  bind(row: EscrowRow, version: string, params: DevshardEscrowParams): SessionLookup {
    const found = this.find(row.id, version);
    if (found) return found;
    const slots = row.slots.flatMap((address, slot) => (address === this.host.address ? [slot] : []));
    if (slots.length === 0)
      return { status: 404, message: 'session not found: host not in the escrow group' };
    try {
      const state = sessionOfRow(row, version, params);
      const session = new HostSession(state, version, slots);
      this.sessions.set(row.id, session);
      return { session };
    } catch (error) {
      // A version name the state machine has no profile for (§11): this host cannot run it.
      if (isDevshardError(error)) {
        return { status: 503, message: error.message, devshardError: 'not_implemented' };
      }
      throw error;
    }
  }
}

export interface DevshardHostsOptions {
  /** Host names or addresses that sign with their warm key instead of the cold one. */
  warmKeySigners?: readonly string[];
}

/** Every host's store, the host clock and the recovery cache the hosts of one devnet share. */
export class DevshardHosts {
  readonly #stores = new Map<string, HostStore>();
  /** Shared by every host of this devnet (recovery-cache.ts says why that is sound). */
  readonly recoveries = new RecoveryCache();

  constructor(
    readonly chain: ChainState,
    readonly clock: HostClock,
    hosts: readonly HostIdentity[],
    options: DevshardHostsOptions = {},
  ) {
    const warm = new Set(options.warmKeySigners ?? []);
    const context: ApplyContext = {
      isWarmKey: (cold, signer) => chain.hasWarmKeyGrant(cold, signer),
      recover: this.recoveries.recover,
    };
    for (const host of hosts) {
      const choice = warm.has(host.name) || warm.has(host.address) ? 'warm' : 'cold';
      this.#stores.set(host.address, new HostStore(host, choice, context, this.recoveries));
    }
  }

  /** The store of a host by address or name. */
  store(host: string): HostStore {
    const found = this.#stores.get(host) ?? [...this.#stores.values()].find((s) => s.host.name === host);
    if (!found) throw new Error(`unknown host ${host}`);
    return found;
  }

  get stores(): readonly HostStore[] {
    return [...this.#stores.values()];
  }
}
