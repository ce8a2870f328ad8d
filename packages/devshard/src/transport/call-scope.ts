// One deadline and one cancellation for a host call (devshard-protocol.md §4.5): the caller's
// AbortSignal and the transport's timer feed a single AbortController whose reason says which one
// fired, so a failed fetch or body read maps to `timeout` or `aborted` rather than a bare AbortError.
import { HostErrorCode, HostTransportError } from './errors.js';

export interface CallScope {
  readonly signal: AbortSignal;
  /** Aborts with `aborted` (reading stopped by us). */
  cancel(detail: string): void;
  /** Clears the timer and the listener on the caller's signal; idempotent. */
  dispose(): void;
  /** The error to report for `error` raised inside this scope. */
  failure(error: unknown, what: string): HostTransportError;
}

export function callScope(what: string, timeoutMs: number, outer?: AbortSignal): CallScope {
  const controller = new AbortController();
  const onAbort = () =>
    controller.abort(new HostTransportError(HostErrorCode.Aborted, `${what}: aborted by the caller`));
  const timer = setTimeout(
    () =>
      controller.abort(
        new HostTransportError(HostErrorCode.Timeout, `${what}: no answer in ${timeoutMs} ms`),
      ),
    timeoutMs,
  );
  // A stream nobody reads must not keep the process alive for 30 minutes.
  timer.unref?.();
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  let disposed = false;
  return {
    signal: controller.signal,
    cancel(detail) {
      controller.abort(new HostTransportError(HostErrorCode.Aborted, `${what}: ${detail}`));
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
    failure(error, label) {
      if (controller.signal.aborted && controller.signal.reason instanceof HostTransportError) {
        return controller.signal.reason;
      }
      if (error instanceof HostTransportError) return error;
      const message = error instanceof Error ? error.message : String(error);
      return new HostTransportError(HostErrorCode.Network, `${label}: ${message}`, { cause: error });
    },
  };
}
