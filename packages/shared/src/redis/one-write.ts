// Several Redis commands in one socket write (docs/performance.md, "Findings"): on this VM a write
// to a local socket costs the process 60–100 µs of kernel time, more than the commands themselves.
// ioredis writes each command to its socket at once, so with the socket corked the commands issued
// meanwhile leave together (one writev) when it is uncorked. Each command keeps its own promise and
// its own error. An ioredis pipeline does the same, but making one cost about as much as the write
// it saved.
//
// holdForTurn extends this across requests: the connection stays corked until the end of the
// event-loop turn (setImmediate), so the admissions and closing commands of every request handled
// in one turn share a write, and Redis answers them in one read (docs/performance.md, "Where a
// request's CPU goes"). Unlike ioredis' auto-pipelining nothing waits for another batch's replies
// and no pipeline object is made per batch: at c=1 the write leaves in the same turn, as before.
import type { Redis } from 'ioredis';

/** Sockets corked until the end of the current turn (one cork each). */
const heldThisTurn = new WeakSet<object>();

/** Keeps `redis`'s writes of this event-loop turn together: one write at its end (setImmediate). */
export function holdForTurn(redis: Redis): void {
  // Not connected: the commands wait in ioredis' offline queue, as they would otherwise.
  if (redis.status !== 'ready') return;
  const socket = redis.stream;
  if (heldThisTurn.has(socket)) return;
  heldThisTurn.add(socket);
  socket.cork();
  setImmediate(() => {
    heldThisTurn.delete(socket);
    socket.uncork();
  });
}

/** Runs `issue`, which sends Redis commands without awaiting them, so that they leave in one write. */
export function inOneWrite(redis: Redis, issue: () => void): void {
  // Not connected: the commands wait in ioredis' offline queue, as they would otherwise.
  const socket = redis.status === 'ready' ? redis.stream : undefined;
  socket?.cork();
  try {
    issue();
  } finally {
    socket?.uncork();
  }
}
