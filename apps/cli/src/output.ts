// Output helpers: JSON with bigints as decimal strings (CONTRIBUTING: money in JSON is a decimal
// string) and bytes as base64; text amounts in ngonka with the GNK equivalent.
import type { CliWriter } from './cli-io.js';

const NGONKA_PER_GNK = 1_000_000_000n;

export function jsonReplacer(key: string, value: unknown): unknown {
  if (key === 'raw') return undefined;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value;
}

export function printJson(out: CliWriter, value: unknown, pretty = true): void {
  out.write(`${JSON.stringify(value, jsonReplacer, pretty ? 2 : undefined)}\n`);
}

export function printLines(out: CliWriter, lines: readonly string[]): void {
  out.write(`${lines.join('\n')}\n`);
}

/** `5000000000 ngonka (5 GNK)`. */
export function formatNgonka(amount: bigint): string {
  const whole = amount / NGONKA_PER_GNK;
  const frac = (amount < 0n ? -amount : amount) % NGONKA_PER_GNK;
  const gnk =
    frac === 0n ? whole.toString() : `${whole}.${frac.toString().padStart(9, '0').replace(/0+$/, '')}`;
  return `${amount} ngonka (${gnk} GNK)`;
}

/** Aligned `label  value` rows. */
export function table(rows: ReadonlyArray<readonly [string, string]>, indent = ''): string[] {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${indent}${k.padEnd(width)}  ${v}`);
}
