// Validation, validation-vote, timeout-vote and error-miss signatures are plain in the pinned v5
// revision and domain-tagged in a later one (devshard-protocol.md §11). Per §12 #6, verification
// tries plain, then tagged, and the first style that verifies is pinned for the session; composer
// and hosts apply this same rule, so they agree on which txs a diff may carry.
import type { PreimageStyle } from '../signing/domains.js';
import { recoverPreimageSigner } from '../signing/primitive.js';
import type { TxEnv } from './apply-context.js';
import { authorizeSlotSigner } from './authorize.js';
import type { WorkingState } from './types.js';

function stylesToTry(s: WorkingState): readonly PreimageStyle[] {
  if (s.voteSigStyle === 'plain') return ['plain'];
  if (s.voteSigStyle === 'tagged') return ['tagged'];
  return ['plain', 'tagged'];
}

/** The authorized state (binding and pinned style included), or null when no style verifies. */
export function verifyStyledSlotSignature(
  s: WorkingState,
  slot: number,
  preimage: (style: PreimageStyle) => Uint8Array,
  signature: Uint8Array,
  env: TxEnv,
): WorkingState | null {
  for (const style of stylesToTry(s)) {
    const signer = recoverPreimageSigner(preimage(style), signature, env.recover);
    // Authorized as the style it verifies in: the signature that pins `tagged` already counts as
    // the later revision's, sibling-slot warm keys included (authorize.ts).
    const next = authorizeSlotSigner(
      s.voteSigStyle === style ? s : { ...s, voteSigStyle: style },
      slot,
      signer,
      env,
    );
    if (next) return next;
  }
  return null;
}
