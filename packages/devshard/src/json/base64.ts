// Go encodes []byte as standard base64 with padding (devshard-protocol.md §4.1). Decoding is strict:
// Buffer.from(…, 'base64') silently skips invalid characters, which must not pass for signatures.

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

const ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;
const PAD = 0x3d; // '='

/** The 6-bit value of a base64 alphabet character (the caller has checked it is one). */
function sextet(code: number): number {
  if (code >= 0x61) return code - 0x61 + 26; // a-z
  if (code >= 0x41) return code - 0x41; // A-Z
  if (code >= 0x30) return code - 0x30 + 52; // 0-9
  return code === 0x2b ? 62 : 63; // + /
}

/**
 * Strict standard base64: length a multiple of 4, alphabet only, at most two '=' at the end, and
 * canonical — the bits the padding leaves over must be zero (RFC 4648 §3.5), which is exactly when
 * re-encoding gives the text back. Decodes straight into a fresh array of the exact length.
 */
export function decodeBase64(text: string): Uint8Array {
  const n = text.length;
  if (n % 4 !== 0 || !ALPHABET.test(text)) {
    throw new SyntaxError('invalid base64');
  }
  const pad = n === 0 || text.charCodeAt(n - 1) !== PAD ? 0 : text.charCodeAt(n - 2) === PAD ? 2 : 1;
  if (pad > 0 && (sextet(text.charCodeAt(n - 1 - pad)) & (pad === 2 ? 0x0f : 0x03)) !== 0) {
    throw new SyntaxError('non-canonical base64');
  }
  const bytes = new Uint8Array((n / 4) * 3 - pad);
  if (bytes.length > 0) Buffer.from(bytes.buffer).write(text, 0, bytes.length, 'base64');
  return bytes;
}
