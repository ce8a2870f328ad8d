// Go encodes []byte as standard base64 with padding (devshard-protocol.md §4.1). Decoding is strict:
// Buffer.from(…, 'base64') silently skips invalid characters, which must not pass for signatures.

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

export function decodeBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    throw new SyntaxError('invalid base64');
  }
  const bytes = new Uint8Array(Buffer.from(text, 'base64'));
  if (encodeBase64(bytes) !== text) throw new SyntaxError('non-canonical base64');
  return bytes;
}
