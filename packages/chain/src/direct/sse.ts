// Server-sent events parsing (WHATWG "event stream" rules) for streamed chat completions: lines end
// in \n, \r\n or \r; `data:` lines accumulate; a blank line dispatches; `:` lines are comments.

export interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

export async function* parseSse(stream: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event = '';
  let id: string | undefined;
  function* lines(final: boolean): Generator<string> {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buffer);
      // A lone \r at the end may be the first half of \r\n: wait for more input.
      if (!m || (m[0] === '\r' && m.index === buffer.length - 1 && !final)) return;
      yield buffer.slice(0, m.index);
      buffer = buffer.slice(m.index + m[0].length);
    }
  }
  function field(line: string): SseEvent | undefined {
    if (line === '') {
      const out = data.length > 0 ? { event: event || 'message', data: data.join('\n'), id } : undefined;
      data = [];
      event = '';
      return out;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data.push(value);
    else if (name === 'event') event = value;
    else if (name === 'id') id = value;
    return undefined;
  }
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (const line of lines(done)) {
        const e = field(line);
        if (e) yield e;
      }
      if (done) break;
    }
    if (buffer !== '') field(buffer);
    const last = field('');
    if (last) yield last;
  } finally {
    reader.releaseLock();
  }
}
