// Whether a registered escrow serves: a proxy replica owns it and has published it in the pool
// state with status `active` and itself as `owner` (architecture §2.1, §4). The replicas claim a
// registered escrow on its `pool:changes` announcement (escrow-runtime claim/claim-loop.ts), so this
// usually takes a few hundred milliseconds. The routes that register an escrow wait for it when
// asked (`wait_until_serving`), so a caller's first chat after the answer is served rather than
// answered 503 no_escrow_available. The wait is bounded; past the bound the answer says what is
// known (`serving: false`).
import type { ControllerContext } from '../controller-context.js';

/** How long a registering route waits for an owner at most. */
export const SERVING_WAIT_MS = 30_000;
/** How often the pool entry is read meanwhile. */
const SERVING_POLL_MS = 50;

/**
 * Waits until the escrow serves; false when `timeoutMs` passes first, or when an owner recorded a
 * fault (a faulted escrow is never claimed again without an operator; claim/active-escrows.ts).
 * Never throws: the escrow exists whatever Redis does, and the answer that carries its id must leave.
 */
export async function waitUntilServing(
  ctx: Pick<ControllerContext, 'redis' | 'keys'>,
  escrowId: bigint,
  timeoutMs = SERVING_WAIT_MS,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0) return false;
    const entry = await within(left, ctx.redis.hmget(ctx.keys.poolEscrow(escrowId), 'status', 'owner'));
    if (entry) {
      const [status, owner] = entry;
      if (status === 'active' && owner) return true;
      if (status === 'faulted') return false;
    }
    const pause = Math.min(SERVING_POLL_MS, deadline - performance.now());
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** The read's answer, or undefined when it failed or took longer than `ms` (Redis unreachable). */
async function within<T>(ms: number, read: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([read.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
