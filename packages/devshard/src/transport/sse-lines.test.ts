import { describe, expect, it } from 'vitest';
import { HostErrorCode } from './errors.js';
import { readLines } from './sse-lines.js';

const enc = new TextEncoder();

async function lines(chunks: readonly string[], max = 1024): Promise<string[]> {
  async function* source() {
    for (const c of chunks) yield enc.encode(c);
  }
  const out: string[] = [];
  for await (const l of readLines(source(), max)) out.push(new TextDecoder().decode(l));
  return out;
}

describe('readLines (§4.4)', () => {
  it('splits on LF, drops a CR before it even across chunks, keeps blank lines and a last unterminated line', async () => {
    expect(await lines(['a\r', '\nb\n\n', 'c', 'd\r\n', 'tail'])).toEqual(['a', 'b', '', 'cd', 'tail']);
    expect(await lines([])).toEqual([]);
    expect(await lines(['\n'])).toEqual(['']);
  });

  it('accepts a line of exactly the bound and refuses one byte more, with or without a newline', async () => {
    expect(await lines(['x'.repeat(8), '\r\n'], 8)).toEqual(['x'.repeat(8)]);
    await expect(lines(['x'.repeat(5), 'x'.repeat(4), '\n'], 8)).rejects.toMatchObject({
      code: HostErrorCode.LineTooLarge,
    });
    await expect(lines(['x'.repeat(9)], 8)).rejects.toMatchObject({ code: HostErrorCode.LineTooLarge });
    // Never-ending line: fails as soon as the bound is passed, before the source ends.
    async function* endless() {
      for (;;) yield enc.encode('y'.repeat(100));
    }
    const reader = readLines(endless(), 1000);
    await expect(reader.next()).rejects.toMatchObject({ code: HostErrorCode.LineTooLarge });
  });
});
