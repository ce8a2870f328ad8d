// Amounts arrive as decimal strings of ngonka (bigint end to end, never a float); shown as GNK with
// the exact ngonka in the title.

const NGONKA_PER_GNK = 1_000_000_000n;

export function gnk(ngonka: string | bigint | null | undefined, digits = 6): string {
  if (ngonka === null || ngonka === undefined || ngonka === '') return '–';
  const n = BigInt(ngonka);
  const neg = n < 0n;
  const abs = neg ? -n : n;
  const whole = abs / NGONKA_PER_GNK;
  const nine = (abs % NGONKA_PER_GNK).toString().padStart(9, '0');
  // Below one GNK the amount keeps every significant digit (a few chats cost micro-GNK).
  const frac = (whole === 0n ? nine : nine.slice(0, digits)).replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole.toLocaleString('en-US')}${frac ? `.${frac}` : ''} GNK`;
}

export function num(n: number | null | undefined, digits = 1): string {
  return n === null || n === undefined ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits });
}

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '–';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return '–';
  const s = (Date.now() - Date.parse(iso)) / 1000;
  return s < 0 ? new Date(iso).toLocaleString() : `${duration(s)} ago`;
}
