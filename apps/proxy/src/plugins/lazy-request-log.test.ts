import { Writable } from 'node:stream';
import { createFastify, createLogger } from '@gonka-gateway/shared';
import { describe, expect, it, vi } from 'vitest';
import { lazyRequestLog } from './lazy-request-log.js';

describe('lazyRequestLog (request.log made at its first line)', () => {
  it('a request that logs gets the child bound to its id; one that does not never makes it', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const logger = createLogger({ destination });
    const app = createFastify(logger, { childLoggerFactory: lazyRequestLog, genReqId: () => 'req-1' });
    const child = vi.spyOn(logger, 'child');
    app.get('/quiet', async () => ({ ok: true }));
    app.get('/loud', async (request) => {
      request.log.warn({ detail: 7 }, 'something happened');
      request.log.info('twice');
      return { ok: true };
    });
    await app.ready();
    expect((await app.inject({ url: '/quiet' })).statusCode).toBe(200);
    expect(child).not.toHaveBeenCalled();
    expect((await app.inject({ url: '/loud' })).statusCode).toBe(200);
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.filter((l) => l.reqId === 'req-1').map((l) => [l.msg, l.level, l.detail])).toEqual([
      ['something happened', 40, 7],
      ['twice', 30, undefined],
    ]);
    await app.close();
  });
});
