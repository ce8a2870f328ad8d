// A reader of the Prometheus text exposition format, just enough for the admin summary
// (summary-routes.ts) to total the proxies' own /metrics: sample lines `name{labels} value`, comments
// skipped. The console must work without a Prometheus server (docs/operator-guide.md "Operator
// console"), so the controller reads the replicas' counters itself.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, '$1');
    const value = Number(m[3]);
    if (!Number.isNaN(value)) out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Cumulative histogram buckets as `[upper bound, count]`, sorted; +Inf as Infinity. */
export type Buckets = [number, number][];

export function histogramBuckets(samples: readonly Sample[], name: string): Buckets {
  const byLe = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || s.labels.le === undefined) continue;
    const le = s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return [...byLe.entries()].sort((a, b) => a[0] - b[0]);
}

/** `a − b` bucket by bucket (the observations between two scrapes); b may be empty. */
export function subtractBuckets(a: Buckets, b: Buckets): Buckets {
  const before = new Map(b);
  return a.map(([le, n]) => [le, Math.max(0, n - (before.get(le) ?? 0))]);
}

/** Adds bucket lists of several replicas (same bounds: one histogram definition). */
export function addBuckets(lists: readonly Buckets[]): Buckets {
  const sum = new Map<number, number>();
  for (const list of lists) for (const [le, n] of list) sum.set(le, (sum.get(le) ?? 0) + n);
  return [...sum.entries()].sort((x, y) => x[0] - y[0]);
}

/**
 * The q-quantile by linear interpolation inside its bucket, as Prometheus's histogram_quantile does;
 * null with no observations. A quantile in the +Inf bucket answers the highest finite bound.
 */
export function quantile(buckets: Buckets, q: number): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return prevLe;
      if (count === prevCount) return le;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (count - prevCount);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}
