import { Writable } from 'node:stream';
import { PrivateKey } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

const PRIVATE_KEY = '10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce';
const USER_KEY = `sk-${'cd'.repeat(24)}`;
const ADMIN_KEY = `sk-admin-${'ab'.repeat(24)}`;

function capture(secrets: string[] = []) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: createLogger({ secrets, destination, level: 'trace' }), lines };
}

describe('logger redaction', () => {
  it('removes a configured private key from message text and any field', () => {
    const { log, lines } = capture([PRIVATE_KEY]);
    log.info(`loaded key ${PRIVATE_KEY}`);
    log.info({ detail: { nested: `0x${PRIVATE_KEY}` } }, 'nested');
    log.error(new Error(`bad key ${PRIVATE_KEY}`));
    for (const line of lines) expect(line).not.toContain(PRIVATE_KEY);
    expect(lines[0]).toContain('[redacted]');
  });

  it('removes API keys by shape even when not configured', () => {
    const { log, lines } = capture();
    log.warn(`user sent ${USER_KEY} and ${ADMIN_KEY}`);
    log.info({ req: { headers: { authorization: `Bearer ${USER_KEY}` } } }, 'request');
    log.info('header was Authorization: Bearer abc.def-ghi');
    const text = lines.join('');
    expect(text).not.toContain(USER_KEY);
    expect(text).not.toContain(ADMIN_KEY);
    expect(text).not.toContain('abc.def-ghi');
  });

  it('censors secret-bearing fields by name', () => {
    const { log, lines } = capture();
    log.info(
      { body: { private_key: 'deadbeef'.repeat(8), model_id: 'm' }, signature: 'c2ln', authorization: 'x' },
      'admin request',
    );
    const entry = JSON.parse(lines[0]!);
    expect(entry.body.private_key).toBe('[redacted]');
    expect(entry.body.model_id).toBe('m');
    expect(entry.signature).toBe('[redacted]');
    expect(entry.authorization).toBe('[redacted]');
  });

  it('prints a PrivateKey object as its address only', () => {
    const { log, lines } = capture();
    log.info({ key: PrivateKey.fromHex(PRIVATE_KEY) }, 'key object');
    expect(lines[0]).not.toContain(PRIVATE_KEY);
  });
});
