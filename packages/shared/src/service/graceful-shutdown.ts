import type { Logger } from '../logger.js';

export interface Closable {
  close(): Promise<unknown>;
}

export interface ShutdownOptions {
  /** Stops accepting and waits for in-flight requests (Fastify's close does both). */
  server: Closable;
  /** Closed after the server, in order (workers before the pools they use). */
  resources: Array<() => Promise<unknown>>;
  logger: Logger;
  /** Hard limit for draining; past it the process exits 1 rather than hang. */
  timeoutMs?: number;
  exit?: (code: number) => void;
  /** Install SIGTERM/SIGINT handlers (default true; tests call the returned function instead). */
  signals?: boolean;
}

/**
 * Installs SIGTERM/SIGINT handlers that drain and exit 0. Returns the shutdown function itself so
 * tests exercise the same path without sending signals to the test runner.
 */
export function installGracefulShutdown(options: ShutdownOptions): () => Promise<void> {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let running: Promise<void> | undefined;
  const shutdown = () => {
    running ??= (async () => {
      const timer = setTimeout(() => {
        options.logger.error('shutdown did not finish in time; exiting');
        exit(1);
      }, options.timeoutMs ?? 25_000);
      timer.unref();
      try {
        options.logger.info('shutting down: draining in-flight requests');
        await options.server.close();
        for (const close of options.resources) await close();
        options.logger.info('shutdown complete');
        clearTimeout(timer);
        exit(0);
      } catch (err) {
        options.logger.error({ err }, 'shutdown failed');
        clearTimeout(timer);
        exit(1);
      }
    })();
    return running;
  };
  if (options.signals ?? true) {
    process.once('SIGTERM', () => void shutdown());
    process.once('SIGINT', () => void shutdown());
  }
  return shutdown;
}
