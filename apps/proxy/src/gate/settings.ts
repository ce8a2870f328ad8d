// The admin settings every replica applies (spec §2.4, §2.6, §3.2, §3.3) and the stored API keys,
// held in memory. A change reaches every replica within a second without a restart
// (docs/keys-and-usage.md: a revoked or rotated key stops working, a changed limit applies, "within
// a second"): the controller publishes on `settings:changes` after its commit, and each message
// starts a read that began after it arrived. Postgres is otherwise read only
//   - at once when the subscription is (re)established: a message published while this replica was
//     not subscribed is lost, so the read happens after the SUBSCRIBE is acknowledged;
//   - every second while the subscription is down (no message can arrive, so the one-second bound
//     is kept by reading);
//   - every 30 s while subscribed, a safety net for a message lost in a way this replica cannot see
//     (a publish that failed after the controller's commit, a connection that died without closing);
//   - every second until a first read has succeeded: until then the replica is not ready
//     (`loaded`, routes/health.ts), because bootstrap values may be wrong for a gateway whose
//     admin changed its settings (access modes, disabled mode, max_tokens; spec §2.4).
// A fixed one-second re-read cost every replica 3–4 statements a second for settings that rarely change.
import { type Database, type GatewayConfig, readSettings } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type { KeyDirectory } from './key-directory.js';

export type AccessMode = 'admin_only' | 'api_key';

export interface GatewaySettings {
  readonly revision: bigint;
  readonly defaultMaxTokens: number;
  readonly maxTokensCap: number;
  /** model_id → access mode; a model not listed is admin_only (spec §2.4). */
  readonly access: ReadonlyMap<string, AccessMode>;
  readonly disabled: { readonly enabled: boolean; readonly message: string; readonly newUrl: string | null };
  /**
   * Top-level chat parameters passed to the hosts without a rule (apps/proxy README "Request
   * policy"): GATEWAY_PASSTHROUGH_PARAMETERS, the deployment's base list, plus
   * settings.passthrough_parameters, which an admin changes without a restart.
   */
  readonly passthrough: ReadonlySet<string>;
}

export interface SettingsSourceOptions {
  readonly database: Pick<Database, 'db' | 'sql'>;
  readonly config: GatewayConfig;
  /** A Redis connection for SUBSCRIBE (it becomes a subscriber-only connection). */
  readonly subscriber?: Redis;
  readonly channel: string;
  /** Stored API keys, re-read with the settings. */
  readonly keys?: Pick<KeyDirectory, 'reload'>;
  /** Safety re-read period while subscribed (default 30 s). */
  readonly refreshEveryMs?: number;
  /**
   * Re-read period while the subscription is down (default 1 s): how stale a copy may get without
   * messages, the one-second bound of docs/keys-and-usage.md.
   */
  readonly unsubscribedRefreshEveryMs?: number;
  readonly onError?: (error: Error) => void;
}

function fromBootstrap(config: GatewayConfig): GatewaySettings {
  const b = config.bootstrapSettings;
  return {
    revision: 0n,
    defaultMaxTokens: b.defaultRequestMaxTokens,
    maxTokensCap: b.requestMaxTokensCap,
    access: new Map(),
    disabled: { ...b.disabled },
    passthrough: new Set(config.proxy.passthroughParameters),
  };
}

type Row = NonNullable<Awaited<ReturnType<typeof readSettings>>>;

function fromRow(row: Row, config: GatewayConfig): GatewaySettings {
  const access = new Map<string, AccessMode>();
  for (const limit of (row.modelLimits as Array<{ model_id?: unknown; access_mode?: unknown }>) ?? []) {
    if (typeof limit?.model_id !== 'string') continue;
    access.set(limit.model_id, limit.access_mode === 'api_key' ? 'api_key' : 'admin_only');
  }
  const d = (row.disabled ?? {}) as { enabled?: unknown; message?: unknown; new_url?: unknown };
  const passthrough = new Set(config.proxy.passthroughParameters);
  const listed: unknown = row.passthroughParameters;
  if (Array.isArray(listed)) for (const name of listed) if (typeof name === 'string') passthrough.add(name);
  return {
    revision: row.revision,
    defaultMaxTokens: row.defaultRequestMaxTokens,
    maxTokensCap: row.requestMaxTokensCap,
    access,
    disabled: {
      enabled: d.enabled === true,
      message: typeof d.message === 'string' ? d.message : '',
      newUrl: typeof d.new_url === 'string' ? d.new_url : null,
    },
    passthrough,
  };
}

export const SETTINGS_SAFETY_REREAD_MS = 30_000;
export const SETTINGS_UNSUBSCRIBED_REREAD_MS = 1_000;

export class SettingsSource {
  readonly #o: SettingsSourceOptions;
  #current: GatewaySettings;
  #timer: NodeJS.Timeout | undefined;
  #loading: Promise<void> | undefined;
  /** A read queued behind #loading: that one may have started before the change that asked. */
  #queued: Promise<void> | undefined;
  /** Whether the SUBSCRIBE is acknowledged on the current connection (messages can arrive). */
  #subscribed = false;
  #subscribePending = false;
  /** A read (settings row and stored keys) has succeeded. */
  #loaded = false;
  #stopped = false;
  readonly #onMessage = (channel: string): void => {
    if (channel === this.#o.channel) void this.#readAfterNow().catch(this.#reportError);
  };
  /** Messages published while disconnected are lost: read faster until subscribed again. */
  readonly #onDisconnect = (): void => {
    if (!this.#subscribed) return;
    this.#subscribed = false;
    this.#schedule();
  };
  /** Connected again (ioredis resubscribes): subscribe, then read what changed meanwhile. */
  readonly #onReady = (): void => {
    // A SUBSCRIBE still waiting is answered on this connection and its read follows: nothing to add
    // (at start this is the connection's first 'ready').
    if (!this.#subscribePending) void this.#subscribeThenRead();
  };
  readonly #reportError = (error: Error): void => this.#o.onError?.(error);

  constructor(options: SettingsSourceOptions) {
    this.#o = options;
    this.#current = fromBootstrap(options.config);
  }

  get current(): GatewaySettings {
    return this.#current;
  }

  /** Whether a read of the settings and the stored keys has completed (readiness). */
  get loaded(): boolean {
    return this.#loaded;
  }

  /**
   * The period of the next planned re-read: the safety period while subscribed and loaded, else one
   * second.
   */
  get refreshEveryMs(): number {
    const safety = this.#o.refreshEveryMs ?? SETTINGS_SAFETY_REREAD_MS;
    if (this.#subscribed && this.#loaded) return safety;
    // Never slower than while subscribed (a test's short safety period stays short).
    return Math.min(safety, this.#o.unsubscribedRefreshEveryMs ?? SETTINGS_UNSUBSCRIBED_REREAD_MS);
  }

  async start(): Promise<void> {
    const sub = this.#o.subscriber;
    if (sub) {
      sub.on('message', this.#onMessage);
      sub.on('close', this.#onDisconnect);
      sub.on('ready', this.#onReady);
      await this.#subscribeThenRead();
    } else {
      await this.reload().catch(this.#reportError);
    }
    this.#schedule();
  }

  /** Reads the row; concurrent callers share one read. A missing row keeps the bootstrap values. */
  reload(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const [row] = await Promise.all([readSettings(this.#o.database.db), this.#o.keys?.reload()]);
        if (row && row.revision !== this.#current.revision) this.#current = fromRow(row, this.#o.config);
        if (!this.#loaded) {
          this.#loaded = true;
          // Loaded now: the next planned read moves to the safety period while subscribed.
          if (this.#timer !== undefined) this.#schedule();
        }
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const sub = this.#o.subscriber;
    sub?.off('message', this.#onMessage);
    sub?.off('close', this.#onDisconnect);
    sub?.off('ready', this.#onReady);
    await sub?.quit().catch(() => undefined);
  }

  /** A read that starts after this call (one queued behind a read in progress, shared by callers). */
  #readAfterNow(): Promise<void> {
    if (this.#loading === undefined) return this.reload();
    this.#queued ??= this.#loading
      .catch(() => undefined)
      .then(() => {
        this.#queued = undefined;
        return this.reload();
      });
    return this.#queued;
  }

  /**
   * Subscribed before reading, so no change falls between the two. The SUBSCRIBE is sent even when
   * ioredis resubscribes by itself: its answer comes after ioredis's, so once it is in, messages flow.
   */
  async #subscribeThenRead(): Promise<void> {
    const sub = this.#o.subscriber;
    if (!sub || this.#stopped) return;
    this.#subscribePending = true;
    try {
      await sub.subscribe(this.#o.channel);
      this.#subscribed = sub.status === 'ready';
    } catch (error) {
      this.#reportError(error as Error);
    } finally {
      this.#subscribePending = false;
    }
    await this.#readAfterNow().catch(this.#reportError);
    // Subscribed now: the next planned read moves to the safety period (or stays at one second).
    if (this.#timer !== undefined) this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      void this.reload()
        .catch(this.#reportError)
        .finally(() => this.#schedule());
    }, this.refreshEveryMs);
    this.#timer.unref();
  }
}
