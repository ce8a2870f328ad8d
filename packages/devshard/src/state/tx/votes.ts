// Vote tallies of TimeoutInference and ErrorMiss (devshard-protocol.md §5.4): every vote's slot must
// be in the group, one vote per address (`duplicate vote`), every signature must verify for its slot
// (`invalid vote sig`, rejecting votes included); accept weight = slots of accepting addresses.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import type { SlotVote } from '../../proto/tx-messages.js';
import type { PreimageStyle } from '../../signing/domains.js';
import type { TxEnv } from '../apply-context.js';
import type { WorkingState } from '../types.js';
import { verifyStyledSlotSignature } from '../vote-style.js';

export function tallyVotes(
  s: WorkingState,
  votes: readonly SlotVote[],
  preimage: (vote: SlotVote, style: PreimageStyle) => Uint8Array,
  env: TxEnv,
): { state: WorkingState; acceptWeight: number } {
  let state = s;
  let acceptWeight = 0;
  const seen = new Set<string>();
  for (const vote of votes) {
    const address = s.group.slots[vote.voterSlot];
    if (address === undefined)
      throw new DevshardError(DevshardErrorCode.SlotNotInGroup, `slot ${vote.voterSlot}`);
    if (seen.has(address)) throw new DevshardError(DevshardErrorCode.DuplicateVote, `slot ${vote.voterSlot}`);
    seen.add(address);
    const next = verifyStyledSlotSignature(
      state,
      vote.voterSlot,
      (style) => preimage(vote, style),
      vote.signature,
      env,
    );
    if (!next) throw new DevshardError(DevshardErrorCode.InvalidVoteSig, `vote from slot ${vote.voterSlot}`);
    state = next;
    if (vote.accept) acceptWeight += s.group.slotCount.get(address)!;
  }
  return { state, acceptWeight };
}

export function requireMajority(s: WorkingState, acceptWeight: number): void {
  if (acceptWeight <= s.config.voteThreshold) {
    throw new DevshardError(
      DevshardErrorCode.InsufficientVotes,
      `need >${s.config.voteThreshold} accept votes, got ${acceptWeight}`,
    );
  }
}
