// Before the first signature of a session this store has never written (no diff, no snapshot): ask
// the escrow's hosts whether nonce 1 exists already (GET diffs, devshard-protocol.md §4 "recovery").
// It does when the escrow served requests from another gateway's store — a hot-swap import into a
// gateway with its own database (spec §4 import, §6 "hot-swap"). Signing nonce 1 again would sign a
// nonce twice with different content, which no protocol rule can undo, so the session refuses to
// open (`history_elsewhere`) and nothing is signed. Hosts that do not answer (down, no recovery
// route, session unknown to them) prove nothing either way: the check passes on them, so a fresh
// escrow whose hosts are briefly unreachable still opens.
import { HostErrorCode, isHostTransportError } from '../transport/errors.js';
import { SessionError, SessionErrorCode } from './errors.js';
import type { SessionContext } from './session-context.js';

/** How long each host gets to answer; the probe runs once per fresh open, hosts in parallel. */
const PROBE_TIMEOUT_MS = 5_000;

export async function refuseHistoryElsewhere(ctx: SessionContext): Promise<void> {
  const addresses = [...ctx.replica.state.group.slotsOf.keys()];
  const found = await Promise.all(
    addresses.map(async (address) => {
      const target = ctx.resolveHost(address);
      if (!target) return false;
      try {
        const diffs = await ctx.transport.getDiffs(target, ctx.escrowId, 1n, 1n, {
          timeoutMs: PROBE_TIMEOUT_MS,
        });
        return diffs.length > 0;
      } catch (error) {
        // 404: the host has no session for the escrow yet — the answer for every fresh escrow.
        if (isHostTransportError(error) && error.code === HostErrorCode.NotFound) return false;
        ctx.emit({ type: 'host_error', host: address, operation: 'history-probe', error: error as Error });
        return false;
      }
    }),
  );
  const holders = addresses.filter((_, i) => found[i]);
  if (holders.length > 0) {
    throw new SessionError(
      SessionErrorCode.HistoryElsewhere,
      `escrow ${ctx.escrowId} already has signed diffs on ${holders.length} of its hosts that this ` +
        'gateway does not hold; import it only into a gateway that shares the session database',
    );
  }
}
