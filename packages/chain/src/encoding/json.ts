// JSON.parse that keeps big integers exact. Go's encoding/json writes int64 as bare numbers on the node
// API (chain-and-network.md §3.4), and a balance of 10^16 ngonka is already past 2^53. JSON.parse
// hands a reviver the literal's source text: an integer literal outside the safe range is kept as that
// text, which parseInteger then reads exactly. Floats and safe integers are untouched.

const INTEGER_LITERAL = /^-?[0-9]+$/;

/** What JSON.parse passes a reviver for a primitive value (ES2025 JSON.parse source text access). */
interface ReviverContext {
  readonly source?: string;
}

function keepUnsafeIntegers(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== 'number' || Number.isSafeInteger(value)) return value;
  const source = context?.source;
  return source !== undefined && INTEGER_LITERAL.test(source) ? source : value;
}

export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, keepUnsafeIntegers as (key: string, value: unknown) => unknown);
}
