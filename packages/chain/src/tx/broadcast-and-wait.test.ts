import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import { isChainError } from '../errors.js';
import { type ChainClient, createChainClient } from '../http/chain-client.js';
import {
  type RecordedRequest,
  sendJson,
  startTestHttpServer,
  type TestHttpServer,
} from '../testing/test-http-server.js';
import { broadcastAndWait } from './broadcast-and-wait.js';
import { findEscrowCreatedEvents } from './events.js';
import { pollTx } from './poll-tx.js';
import { txHash } from './tx-hash.js';
import { type PreparedTx, TxSigner } from './tx-signer.js';

const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const signer = new TxSigner({ key, chainId: 'gonka-devnet', accountNumber: 1n });
const FAST = { intervalMs: 20, timeoutMs: 400 };

/** A tiny chain: POST stores (or not) a tx under the SHA-256 of its bytes; GET answers from the store. */
interface FakeChain {
  onBroadcast: (hash: string, res: ServerResponse) => void;
  /** hash → remaining 404s before the tx appears, and the tx_response it then shows. */
  index: Map<string, { notFoundFor: number; response: Record<string, unknown> }>;
}

function included(hash: string, escrowId = '77') {
  return {
    txhash: hash,
    height: '120',
    code: 0,
    gas_used: '80000',
    events: [{ type: 'devshard_escrow_created', attributes: [{ key: 'escrow_id', value: escrowId }] }],
  };
}

function fakeChainHandler(chain: FakeChain) {
  return (req: RecordedRequest, res: ServerResponse) => {
    if (req.method === 'POST' && req.path === '/cosmos/tx/v1beta1/txs') {
      const body = JSON.parse(req.body.toString()) as { tx_bytes: string; mode: string };
      expect(body.mode).toBe('BROADCAST_MODE_SYNC');
      return chain.onBroadcast(txHash(Buffer.from(body.tx_bytes, 'base64')), res);
    }
    const m = /^\/cosmos\/tx\/v1beta1\/txs\/([0-9A-F]{64})$/.exec(req.path);
    const entry = m ? chain.index.get(m[1]!) : undefined;
    if (!entry || entry.notFoundFor-- > 0)
      return sendJson(res, 404, { code: 5, message: `tx not found: ${m?.[1]}` });
    return sendJson(res, 200, { tx: {}, tx_response: entry.response });
  };
}

const servers: TestHttpServer[] = [];
async function setup(
  chain: Partial<FakeChain>,
): Promise<{ client: ChainClient; server: TestHttpServer; chain: FakeChain }> {
  const full: FakeChain = {
    index: new Map(),
    onBroadcast: (h, res) => sendJson(res, 200, { tx_response: { txhash: h, code: 0 } }),
    ...chain,
  };
  const server = await startTestHttpServer(fakeChainHandler(full));
  servers.push(server);
  return { client: createChainClient({ chainRest: server.url }), server, chain: full };
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const prepare = (): PreparedTx => signer.prepareCreateEscrow({ amount: 5_000_000_000n, modelId: 'm' }, null);

describe('broadcastAndWait', () => {
  it('404 (not indexed yet) twice, then included: returns the escrow id from the events', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (h, res) => {
        s.chain.index.set(h, { notFoundFor: 2, response: included(h) });
        sendJson(res, 200, { tx_response: { txhash: h, code: 0, raw_log: '' } });
      },
    });
    const progress: number[] = [];
    const outcome = await broadcastAndWait(s.client, tx, {
      ...FAST,
      onProgress: (p) => progress.push(p.attempt),
    });
    expect(outcome.status).toBe('included');
    if (outcome.status !== 'included') return;
    expect(outcome.txHash).toBe(tx.txHash);
    expect(outcome.height).toBe(120n);
    expect(findEscrowCreatedEvents(outcome.events)[0]!.escrowId).toBe(77n);
    expect(progress).toEqual([1, 2]);
  });

  it('committed with code != 0: failed at deliver_tx with code, codespace and raw_log', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (h, res) => {
        s.chain.index.set(h, {
          notFoundFor: 0,
          response: {
            txhash: h,
            height: '121',
            code: 1105,
            codespace: 'inference',
            raw_log: 'creator not allowed',
          },
        });
        sendJson(res, 200, { tx_response: { txhash: h, code: 0 } });
      },
    });
    expect(await broadcastAndWait(s.client, tx, FAST)).toEqual({
      status: 'failed',
      txHash: tx.txHash,
      stage: 'deliver_tx',
      code: 1105,
      codespace: 'inference',
      rawLog: 'creator not allowed',
      height: 121n,
    });
  });

  it('never indexed: unknown (not failed), carrying the hash and the timeout timestamp', async () => {
    const tx = prepare();
    const s = await setup({});
    const outcome = await broadcastAndWait(s.client, tx, FAST);
    expect(outcome).toMatchObject({
      status: 'unknown',
      txHash: tx.txHash,
      timeoutTimestampNs: tx.timeoutTimestampNs,
    });
    expect(outcome.status === 'unknown' && outcome.reason).toMatch(/not indexed/);
  });

  it('broadcast connection dropped after the chain took the tx: still resolves by polling', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (h, res) => {
        s.chain.index.set(h, { notFoundFor: 1, response: included(h, '5') });
        res.socket?.destroy();
      },
    });
    const outcome = await broadcastAndWait(s.client, tx, FAST);
    expect(outcome.status).toBe('included');
    expect(s.server.requests.filter((r) => r.method === 'GET').length).toBeGreaterThanOrEqual(2);
  });

  it('broadcast times out or answers 5xx: polls rather than failing', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (_h, res) => sendJson(res, 503, { message: 'upstream overloaded' }),
    });
    const outcome = await broadcastAndWait(s.client, tx, FAST);
    expect(outcome.status).toBe('unknown');
    expect(outcome.status === 'unknown' && outcome.reason).toMatch(
      /broadcast got no answer.*503.*overloaded/,
    );
  });

  it('a 4xx refusal of the request fails at once (after one lookup), 429 is polled', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (_h, res) => sendJson(res, 400, { code: 3, message: 'tx parse error' }),
    });
    expect(await broadcastAndWait(s.client, tx, FAST)).toMatchObject({
      status: 'failed',
      stage: 'check_tx',
      code: 400,
      codespace: 'http',
      rawLog: expect.stringContaining('tx parse error'),
    });
    const limited = await setup({
      onBroadcast: (_h, res) => sendJson(res, 429, { message: 'slow down' }),
    });
    expect((await broadcastAndWait(limited.client, prepare(), FAST)).status).toBe('unknown');
  });

  it('CheckTx refusal with no trace on chain: failed at check_tx', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (h, res) =>
        sendJson(res, 200, {
          tx_response: { txhash: h, code: 13, codespace: 'sdk', raw_log: 'insufficient fee' },
        }),
    });
    expect(await broadcastAndWait(s.client, tx, FAST)).toMatchObject({
      status: 'failed',
      stage: 'check_tx',
      code: 13,
      codespace: 'sdk',
      rawLog: 'insufficient fee',
      height: null,
    });
  });

  it('CheckTx refusal of a re-broadcast tx that is already committed: included', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (h, res) =>
        sendJson(res, 200, { tx_response: { txhash: h, code: 4, codespace: 'sdk', raw_log: 'duplicate' } }),
    });
    s.chain.index.set(tx.txHash, { notFoundFor: 0, response: included(tx.txHash) });
    expect((await broadcastAndWait(s.client, tx, FAST)).status).toBe('included');
  });

  it('"already in mempool cache" (sdk 19) counts as accepted', async () => {
    const tx = prepare();
    const s = await setup({
      onBroadcast: (h, res) => {
        s.chain.index.set(h, { notFoundFor: 0, response: included(h) });
        sendJson(res, 200, {
          tx_response: { txhash: h, code: 19, codespace: 'sdk', raw_log: 'tx already in mempool' },
        });
      },
    });
    expect((await broadcastAndWait(s.client, tx, FAST)).status).toBe('included');
  });

  it('refuses to send bytes whose hash is not the persisted one', async () => {
    const tx = prepare();
    const s = await setup({});
    const err = await broadcastAndWait(s.client, { ...tx, txHash: 'A'.repeat(64) }, FAST).catch(
      (e: unknown) => e,
    );
    expect(isChainError(err, 'CHAIN_ERR_INVALID_ARGUMENT')).toBe(true);
    expect(s.server.requests).toHaveLength(0);
  });
});

describe('pollTx with a separate tx-query base', () => {
  it('finds a tx the tx-query indexer has not seen yet through chain REST', async () => {
    const hash = 'C'.repeat(64);
    const lagging = await setup({});
    const full = await setup({});
    full.chain.index.set(hash, { notFoundFor: 0, response: included(hash) });
    const client = createChainClient({ chainRest: full.server.url, txQueryRest: lagging.server.url });
    expect((await pollTx(client, hash.toLowerCase(), FAST)).status).toBe('included');
    expect(lagging.server.requests).toHaveLength(1);
  });

  it('reports a cancelled poll as unknown, never as an exception', async () => {
    const s = await setup({});
    const controller = new AbortController();
    const pending = pollTx(s.client, 'D'.repeat(64), {
      intervalMs: 50,
      timeoutMs: 10_000,
      signal: controller.signal,
    });
    controller.abort();
    expect(await pending).toMatchObject({ status: 'unknown', reason: expect.stringMatching(/cancelled/) });
  });
});
