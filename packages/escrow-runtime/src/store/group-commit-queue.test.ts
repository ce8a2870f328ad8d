// The shape of GroupCommit (group-commit.ts) without a database: a write with nothing in flight
// goes at once and alone; writes arriving meanwhile go together next, one per escrow, in order; a
// write settles only after its statement has; a statement that throws or leaves a write unsettled
// rejects what it did not settle.
import { describe, expect, it } from 'vitest';
import { type Carried, GroupCommit } from './group-commit.js';

interface Entry {
  readonly escrow: string;
  readonly n: number;
}

function harness(maxBatch = 128, many?: (carried: readonly Carried<Entry>[]) => Promise<void>) {
  const statements: string[][] = [];
  const open: (() => void)[] = [];
  /** A statement that returns when the test says so. */
  const pending = () =>
    new Promise<void>((resolve) => {
      open.push(resolve);
    });
  const gc = new GroupCommit<Entry>({
    key: (e) => e.escrow,
    maxBatch,
    one: async (e) => {
      statements.push([`${e.escrow}${e.n}`]);
      await pending();
    },
    many:
      many ??
      (async (carried) => {
        statements.push(carried.map((c) => `${c.entry.escrow}${c.entry.n}`));
        await pending();
        for (const c of carried) c.resolve();
      }),
  });
  const returnNext = async () => {
    await new Promise((r) => setTimeout(r, 0));
    open.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
  };
  return { gc, statements, returnNext };
}

describe('GroupCommit', () => {
  it('sends a lone write at once, and the writes that arrive meanwhile together next', async () => {
    const { gc, statements, returnNext } = harness();
    const settled: string[] = [];
    const submit = (escrow: string, n: number) =>
      void gc.submit({ escrow, n }).then(() => settled.push(`${escrow}${n}`));
    submit('a', 1);
    expect(statements).toEqual([['a1']]);
    submit('b', 1);
    submit('c', 1);
    submit('a', 2);
    submit('a', 3);
    submit('d', 1);
    await new Promise((r) => setTimeout(r, 0));
    // Nothing settles while its statement is in flight.
    expect(settled).toEqual([]);
    await returnNext();
    expect(settled).toEqual(['a1']);
    // One write per escrow, queue order; a's later writes wait behind a2.
    expect(statements).toEqual([['a1'], ['b1', 'c1', 'a2', 'd1']]);
    await returnNext();
    expect(settled).toEqual(['a1', 'b1', 'c1', 'a2', 'd1']);
    expect(statements.at(-1)).toEqual(['a3']);
    await returnNext();
    expect(settled.at(-1)).toBe('a3');
  });

  it('caps a statement at maxBatch writes', async () => {
    const { gc, statements, returnNext } = harness(2);
    for (const e of ['a', 'b', 'c', 'd']) void gc.submit({ escrow: e, n: 1 });
    await returnNext();
    await returnNext();
    await returnNext();
    expect(statements).toEqual([['a1'], ['b1', 'c1'], ['d1']]);
  });

  it('rejects the writes a statement left unsettled or threw for, and goes on', async () => {
    let calls = 0;
    const { gc, returnNext } = harness(128, async (carried) => {
      calls++;
      carried[0]!.resolve();
      if (calls === 1) throw new Error('connection lost');
      // Leaves the rest unsettled.
    });
    const first = gc.submit({ escrow: 'a', n: 1 });
    const results = [
      gc.submit({ escrow: 'b', n: 1 }),
      gc.submit({ escrow: 'c', n: 1 }),
      gc.submit({ escrow: 'd', n: 1 }),
    ].map((p) =>
      p.then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    await returnNext();
    await first;
    expect(await Promise.all(results)).toEqual(['ok', 'connection lost', 'connection lost']);
    const later = ['e', 'f', 'g'].map((escrow) =>
      gc.submit({ escrow, n: 1 }).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    await returnNext();
    expect(await Promise.all(later)).toEqual([
      'ok',
      'ok',
      'group commit: a write of the statement was left unsettled',
    ]);
  });
});
