// An answer sent while the client is still uploading its body (a body over the limit) must reach
// the client: a socket closed with unread bytes in its receive buffer sends a TCP reset, which
// discards the answer on the client's side (a load balancer relays that reset too). So the rest of
// the body is read and thrown away first, as a lingering close does, up to a bound: past it the
// answer goes out at once and the connection closes (a client sending that much gets a reset).
import type { IncomingMessage } from 'node:http';

/** Bytes read and discarded after the limit before the answer goes out anyway (16 × 4 MiB). */
export const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * Resolves once the request body has been read to its end (true), or when more than `maxBytes`
 * arrived or the connection failed (false: the caller answers and closes).
 */
export function drainRequest(raw: IncomingMessage, maxBytes = MAX_DRAIN_BYTES): Promise<boolean> {
  if (raw.complete || raw.readableEnded || raw.destroyed) return Promise.resolve(raw.complete);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (drained: boolean) => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onFail);
      raw.off('close', onClose);
      resolve(drained);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onFail = () => finish(false);
    const onClose = () => finish(raw.complete);
    raw.on('data', onData);
    raw.on('end', onEnd);
    raw.on('error', onFail);
    raw.on('close', onClose);
    raw.resume();
  });
}
