// One inference as a stream of typed events, in the order the session produced them (devshard
// UserSession.infer): `sent` (the diff is durable and goes to its executor, §5.1), `receipt`,
// each host chunk `line` exactly as received (devshard-protocol.md §4.4), `done` ([DONE]), and
// last the `result` — or `refused` when the session turned the request away before taking a nonce.
// The proxy consumes it with `for await`; nothing in it calls back into the proxy. Events come in
// batches, everything queued since the consumer last read: the lines of one host read arrive
// together, and one wake-up per burst replaces a promise round per event, most of what an answer's
// ~70 events cost on the way (docs/performance.md, "Cuts made").
import type { InferenceHandlers } from '@gonka-gateway/devshard/session';

/** `R`: the session's result (OwnedSessions: OwnedInferenceResult). */
export type InferenceEvent<R> =
  | {
      readonly kind: 'sent';
      readonly nonce: bigint;
      readonly executor: string;
      readonly burned: readonly { readonly nonce: bigint; readonly executor: string }[];
    }
  | { readonly kind: 'receipt'; readonly nonce: bigint; readonly confirmed: boolean }
  | { readonly kind: 'line'; readonly line: Uint8Array }
  | { readonly kind: 'done'; readonly line: Uint8Array }
  | { readonly kind: 'result'; readonly result: R }
  | { readonly kind: 'refused'; readonly error: unknown };

/**
 * Runs `infer` with handlers that queue events, and yields what is queued, in order, as batches.
 * The stream always ends with `result` or `refused`; events are buffered (never dropped) while the
 * consumer is busy, so a consumer that reads to the end sees every one.
 */
export async function* inferenceEvents<R>(
  infer: (handlers: Omit<InferenceHandlers, 'signal'>) => Promise<R>,
): AsyncGenerator<readonly InferenceEvent<R>[], void, undefined> {
  let queued: InferenceEvent<R>[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const wakeConsumer = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  // The queue exists before infer starts: events emitted synchronously are kept, not lost.
  const emit = (event: InferenceEvent<R>) => {
    queued.push(event);
    wakeConsumer();
  };
  infer({
    onSent: (info) => emit({ kind: 'sent', ...info }),
    onReceipt: (info) => emit({ kind: 'receipt', ...info }),
    onChunk: (line) => emit({ kind: 'line', line }),
    onDone: (line) => emit({ kind: 'done', line }),
  })
    .then(
      (result) => emit({ kind: 'result', result }),
      (error: unknown) => emit({ kind: 'refused', error }),
    )
    .finally(() => {
      ended = true;
      wakeConsumer();
    });
  for (;;) {
    if (queued.length > 0) {
      const batch = queued;
      queued = [];
      yield batch;
    } else if (ended) {
      return;
    } else {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  }
}
