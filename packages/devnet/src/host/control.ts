// Test and demo control of the devshard hosts: their clock, their faults (the `down` fault stops and
// starts the host's server, the others are read by the routes per request), their signing key, and
// read access to each host's replica of a session.
import type { DevnetCore } from '../core.js';
import type { Faults } from '../faults.js';
import type { HostFault, HostFaults } from './faults.js';
import type { HostSession } from './session.js';
import type { SigningKeyChoice } from './session-store.js';

export interface DevshardHostsControl {
  /** The hosts' clock (unix s): confirmed_at, timeout deadlines, the ±30 s request window. */
  nowSeconds(): bigint;
  /** Sets (or with null clears) one host's fault; resolves once a `down` change took effect. */
  setFault(host: string, fault: HostFault | null): Promise<void>;
  /** Clears every host fault (servers the `down` fault stopped start again). */
  clearFaults(): Promise<void>;
  /** Waits until servers match the current `down` faults (after `devnet.faults.set`/admin changes). */
  settled(): Promise<void>;
  /** Sign with the host's cold key or its warm key from now on. */
  setSigningKey(host: string, key: SigningKeyChoice): void;
  /** The host's replica of a session (undefined until a call bound it). Read-only use. */
  session(host: string, escrowId: bigint | number): HostSession | undefined;
}

/**
 * Keeps host servers in line with the `down` faults: stops a host when its fault turns `down`, and
 * starts it again when that fault goes away. Hosts stopped by participant.stop() stay as they are.
 */
export class DownFaultReconciler {
  readonly #downByFault = new Set<string>();
  #queue: Promise<void> = Promise.resolve();
  #stopped = false;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly core: DevnetCore,
    private readonly faults: Faults,
  ) {
    this.#unsubscribe = faults.onChange(() => void this.sync());
  }

  /** Serialised so quick toggles apply in order; errors are logged, never thrown at the fault setter. */
  sync(): Promise<void> {
    this.#queue = this.#queue.then(async () => {
      for (const host of this.core.hosts) {
        if (this.#stopped) return;
        const down = this.faults.hostFault(host.address)?.mode === 'down';
        try {
          if (down && !this.#downByFault.has(host.address)) {
            this.#downByFault.add(host.address);
            await this.core.setHostRunning(host.address, false);
          } else if (!down && this.#downByFault.has(host.address)) {
            this.#downByFault.delete(host.address);
            await this.core.setHostRunning(host.address, true);
          }
        } catch (error) {
          process.emitWarning(`devnet host ${host.name}: ${(error as Error).message}`);
        }
      }
    });
    return this.#queue;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    await this.#queue;
  }
}

export function devshardHostsControl(
  core: DevnetCore,
  faults: Faults,
  reconciler: DownFaultReconciler,
): DevshardHostsControl {
  const hosts = core.devshardHosts;
  const addressOf = (host: string) => hosts.store(host).host.address;
  return {
    nowSeconds: () => hosts.clock.nowSeconds(),
    setFault: (host, fault) => {
      const address = addressOf(host);
      const next: HostFaults = { ...faults.current().devshardHosts };
      if (fault) next[address] = fault;
      else delete next[address];
      faults.set({ devshardHosts: Object.keys(next).length > 0 ? next : undefined });
      return reconciler.sync();
    },
    clearFaults: () => {
      faults.set({ devshardHosts: undefined });
      return reconciler.sync();
    },
    settled: () => reconciler.sync(),
    setSigningKey: (host, key) => {
      hosts.store(host).signingKey = key;
    },
    session: (host, escrowId) => hosts.store(host).sessions.get(BigInt(escrowId)),
  };
}
