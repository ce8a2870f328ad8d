// One inference as a stream of typed events, in the order the session produced them (devshard
// UserSession.infer): `sent` (the diff is durable and goes to its executor, §5.1), `receipt`,
// each host chunk `line` exactly as received (devshard-protocol.md §4.4), `done` ([DONE]), and
// last the `result` — or `refused` when the session turned the request away before taking a nonce.
// The proxy consumes it with `for await`; nothing in it calls back into the proxy.
import { EventEmitter, on } from 'node:events';
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
 * Runs `infer` with handlers that queue events, and yields them. The stream always ends with
 * `result` or `refused`; events are buffered (never dropped) while the consumer is busy, so a
 * consumer that reads to the end sees every one.
 */
export async function* inferenceEvents<R>(
  infer: (handlers: Omit<InferenceHandlers, 'signal'>) => Promise<R>,
): AsyncGenerator<InferenceEvent<R>, void, undefined> {
  const emitter = new EventEmitter();
  // Listening starts before infer does: events emitted synchronously are queued, not lost.
  const queued = on(emitter, 'event', { close: ['end'] });
  const emit = (event: InferenceEvent<R>) => emitter.emit('event', event);
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
    .finally(() => emitter.emit('end'));
  for await (const [event] of queued) yield event as InferenceEvent<R>;
}
