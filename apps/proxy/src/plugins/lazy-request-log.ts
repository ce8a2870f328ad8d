// request.log made only when a request logs: Fastify gives every request a pino child logger bound
// to its id, and making one (bindings serialized, redaction set up) is a measurable share of a
// chat request that logs nothing — the usual case (disableRequestLogging, server-options.ts). A
// request that does log gets the same child, with the same bindings, at its first line.
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type Log = (...args: unknown[]) => void;
type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>;

class LazyRequestLog {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #log(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  get level(): string {
    return this.#log.level;
  }

  set level(level: string) {
    this.#log.level = level;
  }

  fatal(...args: unknown[]): void {
    (this.#log.fatal as Log)(...args);
  }

  error(...args: unknown[]): void {
    (this.#log.error as Log)(...args);
  }

  warn(...args: unknown[]): void {
    (this.#log.warn as Log)(...args);
  }

  info(...args: unknown[]): void {
    (this.#log.info as Log)(...args);
  }

  debug(...args: unknown[]): void {
    (this.#log.debug as Log)(...args);
  }

  trace(...args: unknown[]): void {
    (this.#log.trace as Log)(...args);
  }

  silent(...args: unknown[]): void {
    (this.#log.silent as Log)(...args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#log.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's child logger, made at its first use. */
export const lazyRequestLog: ChildLoggerFactory = (
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
) => new LazyRequestLog(logger, bindings, options) as unknown as FastifyBaseLogger;
