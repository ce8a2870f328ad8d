// JSON text looked at as bytes, so a chunk line that holds nothing of interest costs no parse: the
// serve stage runs this for every chunk of every answer.

/** True when `key` (a quoted JSON key, as bytes) occurs in `bytes` other than as `key: null`. */
export function nonNullMember(bytes: Buffer, key: Buffer): boolean {
  for (let at = bytes.indexOf(key); at >= 0; at = bytes.indexOf(key, at + key.length)) {
    if (!isNullMember(bytes, at + key.length)) return true;
  }
  return false;
}

/** True when the bytes from `at` are `: null` (any spaces around the colon). */
function isNullMember(bytes: Buffer, at: number): boolean {
  let i = at;
  while (bytes[i] === 0x20 || bytes[i] === 0x09) i++;
  if (bytes[i++] !== 0x3a) return false;
  while (bytes[i] === 0x20 || bytes[i] === 0x09) i++;
  return bytes[i] === 0x6e && bytes[i + 1] === 0x75 && bytes[i + 2] === 0x6c && bytes[i + 3] === 0x6c;
}
