// Time as the session sees it, injected (CONTRIBUTING: no module-level singletons) so tests move a
// fake clock through refusal/execution deadlines (§7.4) and backoffs (§8.2) without sleeping.

export interface Clock {
  /** Unix time in milliseconds. */
  nowMs(): number;
  /** Unix time in whole seconds: started_at, deadlines (§7.1, §7.4). */
  nowSeconds(): bigint;
  /** Resolves after `ms` (retry backoff); rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = Object.freeze({
  nowMs: () => Date.now(),
  nowSeconds: () => BigInt(Math.floor(Date.now() / 1000)),
  sleep: (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
});
