// HostStatsMapProto{1 entries repeated HostStatsProto} (devshard-protocol.md §3.3). Each entry is the
// chain's 6-field layout, so this reuses @gonka-gateway/chain's codec.
import {
  type DevshardSettlementHostStats,
  decodeHostStats,
  encodeHostStats,
  ProtoWriter,
  readFields,
} from '@gonka-gateway/chain';

/** Entries in the order given; the state root sorts by slot first (hash/root-formula.ts). */
export function encodeHostStatsMap(entries: readonly DevshardSettlementHostStats[]): Uint8Array {
  const w = new ProtoWriter();
  for (const entry of entries) w.message(1, encodeHostStats(entry));
  return w.finish();
}

export function decodeHostStatsMap(bytes: Uint8Array): DevshardSettlementHostStats[] {
  const out: DevshardSettlementHostStats[] = [];
  for (const f of readFields(bytes))
    if (f.field === 1 && f.wireType === 2) out.push(decodeHostStats(f.bytes));
  return out;
}
