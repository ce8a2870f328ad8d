// The escrow's group (devshard-protocol.md §1): accounting and chain quorum are per slot, vote
// weights per address (its slot count).
import { DevshardError, DevshardErrorCode } from '../errors.js';
import type { Group } from './types.js';

/** Bitmap width of validated_by (§3.3); larger groups cannot be represented. */
export const MAX_GROUP_SIZE = 128;

export function buildGroup(slots: readonly string[]): Group {
  if (slots.length === 0 || slots.length > MAX_GROUP_SIZE) {
    throw new DevshardError(DevshardErrorCode.InvalidConfig, `group size ${slots.length}`);
  }
  const slotCount = new Map<string, number>();
  const slotsOf = new Map<string, number[]>();
  slots.forEach((address, slot) => {
    if (address === '')
      throw new DevshardError(DevshardErrorCode.InvalidConfig, `empty address at slot ${slot}`);
    slotCount.set(address, (slotCount.get(address) ?? 0) + 1);
    const list = slotsOf.get(address);
    if (list) list.push(slot);
    else slotsOf.set(address, [slot]);
  });
  return { slots: Object.freeze([...slots]), slotCount, slotsOf };
}

/** Executor of inference `id`: slot `id mod N` (§1). */
export function executorSlotFor(group: Group, id: bigint): number {
  return Number(id % BigInt(group.slots.length));
}

/** Settlement quorum: ⌊2S/3⌋ + 1 slots (§8.2). */
export function quorumThreshold(slotCount: number): number {
  return Math.floor((2 * slotCount) / 3) + 1;
}
