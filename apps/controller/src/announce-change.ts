// Telling the replicas that a stored change is there to read. The message only makes them re-read
// sooner: a replica whose subscription is down re-reads every second and a subscribed one every 30 s
// (apps/proxy gate/settings.ts), so an admin request whose change is already committed must not hang
// on a Redis that is down — ioredis queues commands until it reconnects (maxRetriesPerRequest: null,
// packages/shared redis/client.ts) and the publish would wait as long as the outage. Past a short
// wait the request answers; the queued message still goes out when Redis is back.
import type { ControllerContext } from './controller-context.js';

/** How long an admin request waits for Redis to take an announcement (or a follow-up job). */
export const ANNOUNCE_WAIT_MS = 1_000;

/** True when `work` settled within `ms`; it keeps running either way, its failure only logged. */
export async function settledWithin(
  ctx: Pick<ControllerContext, 'logger'>,
  what: string,
  work: Promise<unknown>,
  ms = ANNOUNCE_WAIT_MS,
): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const done = work.then(
    () => true as const,
    (err: Error) => {
      ctx.logger.warn({ err: err.message }, `${what} failed`);
      return true as const;
    },
  );
  try {
    const inTime = await Promise.race([done, late]);
    if (!inTime) ctx.logger.warn({ waitedMs: ms }, `${what} is waiting for Redis; the request goes on`);
    return inTime;
  } finally {
    clearTimeout(timer);
  }
}

/** Publishes `message` on `channel`, waiting at most ANNOUNCE_WAIT_MS for Redis. */
export function announceChange(
  ctx: Pick<ControllerContext, 'logger' | 'redis'>,
  channel: string,
  message: string,
  ms = ANNOUNCE_WAIT_MS,
): Promise<boolean> {
  return settledWithin(ctx, `announcing a change on ${channel}`, ctx.redis.publish(channel, message), ms);
}
