// Slot sampling for a new escrow (chain-and-network.md §2.6 create rule 6): group_size slots drawn
// by weight, seeded by the block app hash and `devshard_escrow:<nextId>` (and the model, as the
// keeper does). Like the keeper: entries sorted by address, non-positive weights dropped, each slot
// an independent draw, so a heavy validator may hold several slots. The devnet's hash-to-number
// mapping is its own; only the shape of the rule matters to the gateway, which reads slots[] back.
import { sha256 } from '@gonka-gateway/chain';
import { bytesToHex } from '@noble/hashes/utils.js';

export interface WeightEntry {
  address: string;
  weight: bigint;
}

export function drawSlots(input: {
  appHashHex: string;
  seed: string;
  modelId: string;
  weights: readonly WeightEntry[];
  groupSize: number;
}): string[] {
  const entries = input.weights
    .filter((e) => e.weight > 0n)
    .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  const total = entries.reduce((sum, e) => sum + e.weight, 0n);
  if (total === 0n || input.groupSize <= 0) return [];
  const slots: string[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < input.groupSize; i++) {
    const digest = sha256(encoder.encode(`${input.appHashHex}|${input.seed}|${input.modelId}|${i}`));
    let point = BigInt(`0x${bytesToHex(digest.subarray(0, 8))}`) % total;
    for (const entry of entries) {
      if (point < entry.weight) {
        slots.push(entry.address);
        break;
      }
      point -= entry.weight;
    }
  }
  return slots;
}
