import { describe, expect, it } from 'vitest';
import { parseSse, type SseEvent } from './sse.js';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(enc.encode(chunk));
      c.close();
    },
  });
}

async function collect(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of parseSse(streamOf(chunks))) out.push(e);
  return out;
}

describe('parseSse', () => {
  it('splits events on blank lines across arbitrary chunk boundaries and line endings', async () => {
    const events = await collect([
      'data: {"a":',
      '1}\r',
      '\n\r\n: keep-alive\n\nevent: done\ndata: x\ndata: y\n\nda',
      'ta: [DONE]\n\n',
    ]);
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ['message', '{"a":1}'],
      ['done', 'x\ny'],
      ['message', '[DONE]'],
    ]);
  });

  it('dispatches a final event without a trailing blank line', async () => {
    expect((await collect(['data: last'])).map((e) => e.data)).toEqual(['last']);
  });
});
