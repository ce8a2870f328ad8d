// Several Redis commands in one socket write (docs/performance.md, "Findings"): on this VM a write
// to a local socket costs the process 60–100 µs of kernel time, more than the commands themselves.
// ioredis writes each command to its socket at once, so with the socket corked the commands issued
// meanwhile leave together (one writev) when it is uncorked. Each command keeps its own promise and
// its own error. An ioredis pipeline does the same, but making one cost about as much as the write
// it saved.
import type { Redis } from 'ioredis';

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
