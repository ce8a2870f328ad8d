// Warm keys of an escrow's hosts (chain-and-network.md §2.6 Settle 5, devshard-protocol.md
// §5.7): a host may sign receipts, Finish and its state signatures with a warm key, an authz grantee of
// its cold address for MsgStartInference. UserSession asks synchronously (`isWarmKey(cold, signer)`),
// so the grantees of every slot holder are loaded before the session opens (`prepareFor`, bounded by
// `waitMs`) and kept in memory per validator; the validators of open sessions (`track`) are read
// again every `refreshEveryMs` in the background. A failed read keeps the last answer and never
// blocks serving; with no answer at all a lookup says false (only the cold key is accepted), as it
// did before warm keys were looked up. Bindings a diff made are persisted with it (warmKeysBound),
// so replay never depends on this directory.
import { type ChainClient, queryEscrow, queryWarmKeys } from '@gonka-gateway/chain';

export interface WarmKeyDirectoryOptions {
  readonly client: ChainClient;
  /** Background refresh period of the tracked validators, and the age a cached answer is read again at (default 5 min). */
  readonly refreshEveryMs?: number;
  /** How long `prepareFor` waits for the chain before the session opens without a fresh answer (default 3 s). */
  readonly waitMs?: number;
  /** A read failed (the last answer stays in use). */
  readonly onError?: (error: unknown) => void;
}

interface Answer {
  readonly grantees: ReadonlySet<string>;
  readonly at: number;
}

export class WarmKeyDirectory {
  readonly #o: WarmKeyDirectoryOptions;
  /** validator (cold) → its last answer. */
  readonly #answers = new Map<string, Answer>();
  /** Reads in progress per validator (concurrent callers share one). */
  readonly #reading = new Map<string, Promise<void>>();
  /** Slot holders per escrow (an escrow's group is frozen for its life, devshard-protocol.md §4.1). */
  readonly #holders = new Map<bigint, readonly string[]>();
  /** Escrows whose sessions are open here: their validators are refreshed in the background. */
  readonly #tracked = new Map<bigint, readonly string[]>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: WarmKeyDirectoryOptions) {
    this.#o = options;
  }

  get #refreshEveryMs(): number {
    return this.#o.refreshEveryMs ?? 300_000;
  }

  /** UserSessionOptions.isWarmKey: whether `signer` is a warm key of validator `cold` as last read. */
  isWarmKey = (cold: string, signer: string): boolean =>
    this.#answers.get(cold)?.grantees.has(signer) ?? false;

  /** The warm keys last read for `cold` (undefined before any answer). */
  warmKeysOf(cold: string): readonly string[] | undefined {
    const answer = this.#answers.get(cold);
    return answer ? [...answer.grantees] : undefined;
  }

  /**
   * Before escrow `escrowId`'s session opens: reads its slot holders (once) and their warm keys when
   * not read within the refresh period, waiting at most `waitMs`. Never throws: reads that fail or
   * land late leave the last answers in place (a late answer is still taken when it lands).
   */
  async prepareFor(escrowId: bigint): Promise<void> {
    await this.#bounded(
      (async () => {
        const holders = await this.#holdersOf(escrowId);
        await this.ensure(holders);
      })(),
    );
  }

  /** Reads the warm keys of `validators` not read within the refresh period; never throws. */
  async ensure(validators: Iterable<string>): Promise<void> {
    const now = Date.now();
    const stale = [...new Set(validators)].filter((v) => {
      const answer = this.#answers.get(v);
      return answer === undefined || now - answer.at >= this.#refreshEveryMs;
    });
    await Promise.all(stale.map((v) => this.#read(v)));
  }

  /** A session of escrow `escrowId` opened here with these slot holders: keep their warm keys fresh. */
  track(escrowId: bigint, slots: readonly string[]): void {
    const validators = [...new Set(slots)];
    this.#holders.set(escrowId, validators);
    this.#tracked.set(escrowId, validators);
    void this.ensure(validators);
    this.#timer ??= setInterval(() => void this.refresh(), this.#refreshEveryMs);
    this.#timer.unref?.();
  }

  /** The escrow's session closed here. */
  forget(escrowId: bigint): void {
    this.#tracked.delete(escrowId);
    this.#holders.delete(escrowId);
    if (this.#tracked.size === 0) this.close();
  }

  /** Reads the warm keys of every tracked validator again; never throws. */
  async refresh(): Promise<void> {
    const validators = new Set<string>();
    for (const list of this.#tracked.values()) for (const v of list) validators.add(v);
    await Promise.all([...validators].map((v) => this.#read(v)));
  }

  /** Stops the background refresh. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #holdersOf(escrowId: bigint): Promise<readonly string[]> {
    const known = this.#holders.get(escrowId);
    if (known) return known;
    const { escrow } = await queryEscrow(this.#o.client, escrowId);
    const holders = [...new Set(escrow?.slots ?? [])];
    if (escrow) this.#holders.set(escrowId, holders);
    return holders;
  }

  #read(validator: string): Promise<void> {
    let reading = this.#reading.get(validator);
    if (!reading) {
      reading = (async () => {
        try {
          const grantees = await queryWarmKeys(this.#o.client, validator);
          this.#answers.set(validator, { grantees: new Set(grantees), at: Date.now() });
        } catch (error) {
          this.#o.onError?.(error);
        } finally {
          this.#reading.delete(validator);
        }
      })();
      this.#reading.set(validator, reading);
    }
    return reading;
  }

  /** Waits for `work` at most waitMs; its failure is reported, never thrown. */
  async #bounded(work: Promise<void>): Promise<void> {
    const guarded = work.catch((error: unknown) => this.#o.onError?.(error));
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        guarded,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.#o.waitMs ?? 3_000);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}
