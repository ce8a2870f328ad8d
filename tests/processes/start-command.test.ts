// The README's `./start` as a user runs it (issue 13 item 1): devnet, controller, two proxy replicas
// behind HAProxy on the gateway port, the demo escrow opened through the admin API, and the printed
// curl's user key streaming a chat completion through the load balancer; SIGTERM stops every child.
// When haproxy is not on PATH the same test checks the one-replica fallback (tests never install).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findHaproxy } from '@gonka-gateway/deploy';
import { dropTestDatabase } from '@gonka-gateway/shared/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startProcess } from '../support/gateway-process.js';

const dbName = `gw_start_${randomBytes(5).toString('hex')}`;
afterAll(async () => {
  await dropTestDatabase(dbName);
});

/** Pids of every descendant of `pid` (children, grandchildren, …). */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const walk = (p: number) => {
    for (const [child, parent] of table) {
      if (parent === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the README start command', () => {
  const withHaproxy = findHaproxy() !== undefined;

  it(`starts devnet, controller and ${withHaproxy ? 'two replicas behind haproxy' : 'one replica (no haproxy)'}, opens the demo escrow, streams a chat with the printed key, and stops every child on SIGTERM`, async () => {
    const db = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    db.pathname = `/${dbName}`;
    const [gatewayPort, p1, p2, controllerPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-start-'));
    const start = startProcess('deploy/src/start.ts', {
      DEVNET_PORTS: 'ephemeral',
      DEVNET_BLOCK_INTERVAL_MS: '100',
      START_DATA_DIR: dataDir,
      START_GATEWAY_PORT: String(gatewayPort),
      DEVSHARD_PORT: String(p1),
      START_SECOND_PROXY_PORT: String(p2),
      GATEWAY_CONTROLLER_PORT: String(controllerPort),
      DATABASE_URL: db.toString(),
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `gwstart:${randomBytes(4).toString('hex')}:`,
      // Every secret comes from the environment, so ./start writes no dev.env into the checkout.
      DEVSHARD_PRIVATE_KEY: randomBytes(32).toString('hex'),
      DEVSHARD_API_KEYS: `sk-${randomBytes(24).toString('hex')}`,
      DEVSHARD_ADMIN_API_KEY: `sk-admin-${randomBytes(24).toString('hex')}`,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      // Never install anything from a test: with haproxy missing, the fallback is what is checked.
      CI: 'true',
    });
    try {
      await expect
        .poll(() => start.output().includes('gateway ready on the devnet') || start.child.exitCode !== null, {
          timeout: 150_000,
          interval: 200,
        })
        .toBe(true);
      const out = start.output();
      expect(start.child.exitCode, out).toBeNull();
      expect(out).toMatch(/broadcasting…/);
      expect(out).toMatch(/included: tx [0-9A-F]{64}, escrow \d+/);
      expect(out).toMatch(/registered: yes/);
      if (withHaproxy) {
        expect(out).toContain(`haproxy → proxy replicas on :${p1} and :${p2}`);
        const cfg = readFileSync(join(dataDir, 'haproxy.cfg'), 'utf8');
        expect(cfg).toContain(`bind 127.0.0.1:${gatewayPort}`);
        expect(cfg).not.toMatch(/compression/);
      } else {
        expect(out).toMatch(/haproxy is not installed and cannot be installed here: one proxy replica/);
      }

      // The printed curl, as pasted: its key, model and URL.
      const curl = /curl -N (\S+) \\\n\s+-H 'authorization: Bearer (sk-[^']+)'[^\n]*\\\n\s+-d '([^']+)'/.exec(
        out,
      );
      expect(curl, out).not.toBeNull();
      const [, url, key, body] = curl!;
      expect(url).toBe(`http://127.0.0.1:${gatewayPort}/v1/chat/completions`);
      const res = await fetch(url!, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body!.replace('"stream":true', '"stream":true,"max_tokens":16'),
        signal: AbortSignal.timeout(60_000),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
      const text = await res.text();
      const deltas = text
        .split('\n')
        .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
        .map((l) => JSON.parse(l.slice(6)) as { choices: { delta?: { content?: string } }[] });
      expect(deltas.map((d) => d.choices[0]?.delta?.content ?? '').join('').length).toBeGreaterThan(0);
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);

      // Every child of ./start (tsx workers, replicas, controller, haproxy) is gone after SIGTERM.
      const kids = descendants(start.child.pid!);
      if (withHaproxy) {
        const names = execFileSync('ps', ['-o', 'comm=', '-p', kids.join(',')], { encoding: 'utf8' });
        expect(names).toMatch(/haproxy/);
      }
      expect(await start.stop()).toBe(0);
      // esbuild service helpers of tsx end when their parent's pipe closes, a moment after it.
      const survivors = () => {
        const left = kids.filter(alive);
        return left.length
          ? execFileSync('ps', ['-o', 'pid,ppid,stat,args', '-p', left.join(',')], { encoding: 'utf8' })
          : '';
      };
      await expect.poll(survivors, { timeout: 10_000, interval: 100 }).toBe('');
      await expect(fetch(`http://127.0.0.1:${gatewayPort}/v1/status`)).rejects.toThrow();
    } finally {
      await start.stop('SIGTERM');
    }
  }, 200_000);

  it('names a taken port with the variable that moves it, before starting anything', async () => {
    const blocker = createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const taken = (blocker.address() as { port: number }).port;
    try {
      const start = startProcess('deploy/src/start.ts', {
        START_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-start-')),
        START_GATEWAY_PORT: String(taken),
        DEVSHARD_PORT: String(await freePort()),
        START_SECOND_PROXY_PORT: String(await freePort()),
        GATEWAY_CONTROLLER_PORT: String(await freePort()),
      });
      expect(await start.exited).toBe(1);
      expect(start.output()).toContain(`port ${taken} is taken; START_GATEWAY_PORT moves it`);
      expect(start.output()).not.toContain('starting the devnet');
    } finally {
      blocker.close();
    }
  }, 30_000);
});
