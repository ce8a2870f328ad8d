// The admin settings every replica applies (spec §2.4, §2.6, §3.2, §3.3), held in memory. A change
// reaches every replica within a second without a restart: the controller publishes the new revision
// on `settings:changes`, and a periodic read of the row (revision compared) catches a missed message.
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
}

export interface SettingsSourceOptions {
  readonly database: Pick<Database, 'db' | 'sql'>;
  readonly config: GatewayConfig;
  /** A Redis connection for SUBSCRIBE (it becomes a subscriber-only connection). */
  readonly subscriber?: Redis;
  readonly channel: string;
  /** Stored API keys, re-read with the settings (issue 14). */
  readonly keys?: Pick<KeyDirectory, 'reload'>;
  /** Re-read period (default 1 s). */
  readonly refreshEveryMs?: number;
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
  };
}

type Row = NonNullable<Awaited<ReturnType<typeof readSettings>>>;

function fromRow(row: Row): GatewaySettings {
  const access = new Map<string, AccessMode>();
  for (const limit of (row.modelLimits as Array<{ model_id?: unknown; access_mode?: unknown }>) ?? []) {
    if (typeof limit?.model_id !== 'string') continue;
    access.set(limit.model_id, limit.access_mode === 'api_key' ? 'api_key' : 'admin_only');
  }
  const d = (row.disabled ?? {}) as { enabled?: unknown; message?: unknown; new_url?: unknown };
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
  };
}

export class SettingsSource {
  readonly #o: SettingsSourceOptions;
  #current: GatewaySettings;
  #timer: NodeJS.Timeout | undefined;
  #loading: Promise<void> | undefined;
  #stopped = false;

  constructor(options: SettingsSourceOptions) {
    this.#o = options;
    this.#current = fromBootstrap(options.config);
  }

  get current(): GatewaySettings {
    return this.#current;
  }

  async start(): Promise<void> {
    await this.reload().catch((error: Error) => this.#o.onError?.(error));
    const sub = this.#o.subscriber;
    if (sub) {
      sub.on('message', (channel: string) => {
        if (channel === this.#o.channel) void this.reload().catch((error: Error) => this.#o.onError?.(error));
      });
      await sub.subscribe(this.#o.channel).catch((error: Error) => this.#o.onError?.(error));
    }
    this.#schedule();
  }

  /** Reads the row; concurrent callers share one read. A missing row keeps the bootstrap values. */
  reload(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const [row] = await Promise.all([readSettings(this.#o.database.db), this.#o.keys?.reload()]);
        if (row && row.revision !== this.#current.revision) this.#current = fromRow(row);
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#o.subscriber?.quit().catch(() => undefined);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.reload()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => this.#schedule());
    }, this.#o.refreshEveryMs ?? 1_000);
    this.#timer.unref();
  }
}
