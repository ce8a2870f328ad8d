// Statements of the store's hot writes, written once with named parameters and sent with
// `sql.unsafe(text, values, { prepare: true })`. postgres.js rebuilds the text of a tagged template
// from its pieces on every call, and makes a Query of each nested fragment: ~30–60 µs of the
// proxy's CPU per chat request for the write-ahead and the Confirm/Finish save. The
// values are typed by the same inference as a tagged template's, in the same order, so Postgres
// receives the same prepared statement and the same Bind.
import type { ParameterOrJSON } from 'postgres';

type Value = ParameterOrJSON<never>;

export class FixedStatement<N extends string> {
  /** The text with $1…$n, one per occurrence of a name (a name used twice is sent twice). */
  readonly text: string;
  readonly names: readonly N[];
  /** Literal text around the names: pieces[i] comes before names[i], the last one after all. */
  readonly pieces: readonly string[];

  constructor(pieces: readonly string[], names: readonly N[]) {
    this.pieces = pieces;
    this.names = names;
    let text = pieces[0] ?? '';
    for (let i = 0; i < names.length; i++) text += `$${i + 1}${pieces[i + 1] ?? ''}`;
    this.text = text;
  }

  /** The parameters for `values`, in placeholder order. */
  values(values: Readonly<Record<N, Value>>): Value[] {
    return this.names.map((name) => values[name]);
  }
}

/**
 * A fixed statement from a template whose holes are parameter names or other fixed statements
 * (spliced in, their parameters renumbered after the ones before them).
 */
export function fixedStatement<N extends string>(
  strings: TemplateStringsArray,
  ...holes: Array<N | FixedStatement<N>>
): FixedStatement<N> {
  const pieces: string[] = [strings[0]!];
  const names: N[] = [];
  holes.forEach((hole, i) => {
    const after = strings[i + 1]!;
    if (typeof hole === 'string') {
      names.push(hole);
      pieces.push(after);
      return;
    }
    pieces[pieces.length - 1] += hole.pieces[0] ?? '';
    hole.names.forEach((name, k) => {
      names.push(name);
      pieces.push(hole.pieces[k + 1] ?? '');
    });
    pieces[pieces.length - 1] += after;
  });
  return new FixedStatement(pieces, names);
}
