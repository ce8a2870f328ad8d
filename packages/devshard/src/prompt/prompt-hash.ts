// prompt_hash = sha256(canonical_json(prompt_bytes)) (devshard-protocol.md §2.5). prompt_bytes is
// exactly the body sent as payload.prompt; the executor recomputes this and refuses on mismatch.
import { utf8 } from '../hash/bytes.js';
import { sha256Parts } from '../hash/sha256.js';
import { canonicalizeJson } from './canonical-json.js';

export function promptHash(promptBytes: Uint8Array): Uint8Array {
  return sha256Parts(utf8(canonicalizeJson(promptBytes)));
}
