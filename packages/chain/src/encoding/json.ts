// JSON.parse that keeps big integers exact. Go's encoding/json writes int64 as bare numbers on the node
// API (chain-and-network.md §3.4), and a balance of 10^16 ngonka is already past 2^53. Node 20 has no
// JSON.parse source access, so integer literals outside the safe range are quoted before parsing;
// parseInteger then reads the string exactly. Floats and safe integers are untouched.

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function parseJsonExact(text: string): unknown {
  let out = '';
  let last = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i++;
      while (i < text.length) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
      continue;
    }
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < text.length && /[0-9.eE+-]/.test(text[i]!)) i++;
      const token = text.slice(start, i);
      if (/^-?[0-9]+$/.test(token) && token.length > 15) {
        const n = BigInt(token);
        if (n > MAX_SAFE || n < -MAX_SAFE) {
          out += `${text.slice(last, start)}"${token}"`;
          last = i;
        }
      }
      continue;
    }
    i++;
  }
  return JSON.parse(last === 0 ? text : out + text.slice(last));
}
