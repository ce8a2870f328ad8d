// gwctl admin and gwctl chat against a fake gateway on a real HTTP port: the request each command
// sends (method, path, body, bearer key from the environment), the output, and the refusals. The
// commands run against the real gateway in the documentation test (tests/docs).
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeServer, gwctl, json, startFakeServer } from '../testing/cli-harness.js';

const ADMIN = `sk-admin-${'cd'.repeat(24)}`;
const USER = `sk-${'ef'.repeat(24)}`;
let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('gwctl admin', () => {
  it('create-escrow posts the escrow with the chain id and the key variable name, authorized by the admin key', async () => {
    server = await startFakeServer([
      (r, res) =>
        r.path === '/v1/admin/escrows' &&
        json(res, 200, { escrow_id: 7, tx_hash: 'AB'.repeat(32), creator: 'gonka1x', registered: true }),
    ]);
    const run = await gwctl(
      [
        'admin',
        'create-escrow',
        '--amount',
        '5000000000',
        '--chain-id',
        'gonka-devnet',
        '--gateway-url',
        server.url,
      ],
      { env: { DEVSHARD_ADMIN_API_KEY: ADMIN } },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('escrow_id: 7');
    const [req] = server.requests;
    expect(req!.method).toBe('POST');
    expect(req!.headers.authorization).toBe(`Bearer ${ADMIN}`);
    expect(JSON.parse(String(req!.body))).toEqual({
      amount: '5000000000',
      model_id: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
      chain_id: 'gonka-devnet',
      private_key_env: 'DEVSHARD_PRIVATE_KEY',
      register: true,
    });
    expect(run.stdout).not.toContain(ADMIN);
  });

  it('settle --wait queues the settlement and polls until the escrow is settled', async () => {
    let polls = 0;
    server = await startFakeServer([
      (r, res) =>
        r.path === '/v1/admin/devshards/7/settle' &&
        json(res, 202, { escrow_id: 7, job_id: 'settle-7', state: 'active' }),
      (r, res) =>
        r.path === '/v1/admin/devshards/7' &&
        json(res, 200, {
          escrow_id: 7,
          model_id: 'm',
          active: true,
          state: ++polls < 2 ? 'settling' : 'settled',
        }),
    ]);
    const run = await gwctl(['admin', 'settle', '7', '--wait', '--gateway-url', server.url], {
      env: { DEVSHARD_ADMIN_API_KEY: ADMIN },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('escrow 7 settled');
    expect(JSON.parse(String(server.requests[0]!.body))).toEqual({ private_key_env: 'DEVSHARD_PRIVATE_KEY' });
    expect(polls).toBe(2);
  });

  it('settle --ids streams the batch: one line per escrow, a summary, exit 1 when one failed', async () => {
    const lines = [
      { escrow_id: '3', ok: true, tx_hash: 'AB'.repeat(32), refund: '4990000000' },
      { escrow_id: '4', ok: false, error: { code: 'not_found', message: 'escrow 4 is not registered' } },
      { escrow_id: '5', ok: false, error: { code: 'already_settled', message: 'escrow 5 is settled' } },
      { summary: { total: 3, settled: 1, already_settled: 1, failed: 1, codes: { not_found: 1 } } },
    ];
    server = await startFakeServer([
      (r, res) => {
        if (r.path !== '/v1/admin/devshards/settle') return false;
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        for (const line of lines) res.write(`${JSON.stringify(line)}\n`);
        res.end();
        return true;
      },
    ]);
    const env = { DEVSHARD_ADMIN_API_KEY: ADMIN };
    const run = await gwctl(['admin', 'settle', '--ids', '3,4,5', '--force', '--gateway-url', server.url], {
      env,
      // A terminal on stderr: the counter is redrawn there, the lines go to stdout.
      stderr: { isTTY: true, write: () => true },
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('escrow 3: settled (tx ABAB');
    expect(run.stdout).toContain('refund 4990000000 ngonka (4.99 GNK)');
    expect(run.stdout).toContain('escrow 4: not_found: escrow 4 is not registered');
    expect(run.stdout).toContain('settled 1, already settled 1, failed 1 of 3 (not_found 1)');
    expect(run.stderr).toContain('3/3 done, 1 failed');
    expect(JSON.parse(String(server.requests[0]!.body))).toEqual({
      private_key_env: 'DEVSHARD_PRIVATE_KEY',
      escrow_ids: ['3', '4', '5'],
      force: true,
    });

    const inactive = await gwctl(
      ['admin', 'settle', '--all-inactive', '--json', '--gateway-url', server.url],
      {
        env,
      },
    );
    expect(
      inactive.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(lines);
    expect(JSON.parse(String(server.requests[1]!.body))).toEqual({
      private_key_env: 'DEVSHARD_PRIVATE_KEY',
      filter: { inactive: true },
    });
    for (const argv of [['--ids', '3', '--model', 'm'], ['7', '--ids', '3'], ['--ids', '3,x'], []]) {
      const refused = await gwctl(['admin', 'settle', ...argv, '--gateway-url', server.url], { env });
      expect(refused.code, argv.join(' ')).toBe(2);
    }
    expect(server.requests).toHaveLength(2);
  });

  it("shows the gateway's error message; a missing admin key is a usage error naming the variable", async () => {
    server = await startFakeServer([
      (r, res) =>
        r.path === '/v1/admin/devshards/9' &&
        json(res, 404, {
          error: {
            message: 'escrow 9 is not registered',
            type: 'invalid_request_error',
            param: 'id',
            code: 'escrow_not_found',
          },
        }),
    ]);
    const missing = await gwctl(['admin', 'devshard', '9', '--gateway-url', server.url], { env: {} });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('DEVSHARD_ADMIN_API_KEY is not set');
    const notFound = await gwctl(['admin', 'devshard', '9', '--gateway-url', server.url], {
      env: { DEVSHARD_ADMIN_API_KEY: ADMIN },
    });
    expect(notFound.code).toBe(1);
    expect(notFound.stderr).toContain('HTTP 404 escrow_not_found: escrow 9 is not registered');
    const badId = await gwctl(['admin', 'settle', 'x1', '--gateway-url', server.url], {
      env: { DEVSHARD_ADMIN_API_KEY: ADMIN },
    });
    expect(badId.code).toBe(2);
  });
});

describe('gwctl chat', () => {
  it('sends the message with the first user key and prints the answer, streamed or not', async () => {
    server = await startFakeServer([
      (r, res) => {
        if (r.path !== '/v1/chat/completions') return false;
        const body = JSON.parse(String(r.body));
        if (!body.stream) return json(res, 200, { choices: [{ message: { content: 'plain answer' } }] });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const piece of ['stre', 'amed'])
          res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: piece } }] })}\n\n`);
        res.end('data: [DONE]\n\n');
        return true;
      },
    ]);
    const env = { DEVSHARD_API_KEYS: `${USER}, sk-${'01'.repeat(24)}` };
    const plain = await gwctl(['chat', 'hi', '--max-tokens', '8', '--gateway-url', server.url], { env });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toBe('plain answer\n');
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${USER}`);
    expect(JSON.parse(String(server.requests[0]!.body))).toMatchObject({
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const streamed = await gwctl(['chat', 'hi', '--stream', '--gateway-url', server.url], { env });
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(streamed.stdout).toBe('streamed\n');
  });
});
