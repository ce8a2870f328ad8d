import { describe, expect, it } from 'vitest';
import { type InferenceEvent, inferenceEvents } from './inference-events.js';

const line = (text: string) => new TextEncoder().encode(text);

async function read<R>(stream: AsyncIterable<readonly InferenceEvent<R>[]>) {
  const batches: string[][] = [];
  for await (const batch of stream) batches.push(batch.map((e) => e.kind));
  return batches;
}

describe('inferenceEvents', () => {
  it('keeps every event in order, the synchronous ones included, and ends with the result', async () => {
    const stream = inferenceEvents<string>(async (h) => {
      h.onSent?.({ nonce: 7n, executor: 'host-a', burned: [] });
      h.onReceipt?.({ nonce: 7n, confirmed: true });
      await new Promise((r) => setImmediate(r));
      // One host read: its lines arrive together and are read as one batch.
      for (let i = 0; i < 3; i++) h.onChunk?.(line(`data: ${i}`));
      await new Promise((r) => setImmediate(r));
      h.onDone?.(line('data: [DONE]'));
      return 'served';
    });
    const batches = await read(stream);
    expect(batches.flat()).toEqual(['sent', 'receipt', 'line', 'line', 'line', 'done', 'result']);
    expect(batches).toContainEqual(['line', 'line', 'line']);
  });

  it('ends with `refused` when infer rejects, after what it emitted', async () => {
    const error = new Error('no eligible host');
    const events: InferenceEvent<never>[] = [];
    for await (const batch of inferenceEvents<never>(async (h) => {
      h.onSent?.({ nonce: 1n, executor: 'host-a', burned: [] });
      throw error;
    }))
      events.push(...batch);
    expect(events.map((e) => e.kind)).toEqual(['sent', 'refused']);
    expect(events.at(-1)).toEqual({ kind: 'refused', error });
  });

  it('buffers while the consumer is busy and drops nothing', async () => {
    let release!: () => void;
    const busy = new Promise<void>((r) => {
      release = r;
    });
    const stream = inferenceEvents<number>(async (h) => {
      h.onSent?.({ nonce: 1n, executor: 'host-a', burned: [] });
      for (let i = 0; i < 50; i++) {
        h.onChunk?.(line(String(i)));
        await null;
      }
      return 50;
    });
    const seen: InferenceEvent<number>[] = [];
    for await (const batch of stream) {
      seen.push(...batch);
      if (seen.length === 1) {
        setTimeout(release, 20);
        await busy;
      }
    }
    expect(seen.filter((e) => e.kind === 'line')).toHaveLength(50);
    expect(seen.at(-1)).toEqual({ kind: 'result', result: 50 });
  });
});
