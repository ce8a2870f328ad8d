// Settling over the admin API on the devnet: the batch settle (NDJSON, one line per escrow, failures
// by code, the others settled to the ngonka), the 402 of a settler that cannot pay the settle fee
// (nothing finalized), and a forced settle that cuts a request in flight at a real owner replica.
// One devnet and one controller (with its job workers) for the whole file.
import {
  findEscrowSettledEvents,
  lookupTx,
  MSG_SETTLE_DEVSHARD_ESCROW,
  queryEscrow,
} from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { creatorKeyFromEnv, OwnershipRuntime } from '@gonka-gateway/escrow-runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import {
  adminHeaders,
  adminInject,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { devnetSessionClock } from '../testing/devnet-clock.js';

const DEPOSIT = 5n * GNK;

describe('settle routes', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let ctx: ControllerContext;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ jobs: true, drainWaitMs: 5_000 });
    ctx = h.context();
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const batch = async (payload: object) => {
    const res = await adminInject(app, 'POST', '/v1/admin/devshards/settle', payload);
    return {
      res,
      lines: res.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    };
  };
  const state = async (id: bigint) =>
    (await h.sql`select state from escrows where escrow_id = ${id.toString()}`)[0]?.state;

  /** deposit = host payouts + fees + refund, from the settle event and the finalize document. */
  const expectSettledToTheNgonka = async (id: bigint, txHash: string, refund?: string) => {
    const found = await lookupTx(h.chain, txHash);
    const events = found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [];
    const [event] = findEscrowSettledEvents(events);
    expect(event!.escrowId).toBe(id);
    expect(event!.totalPayout + event!.remainder).toBe(DEPOSIT);
    const [doc] = await h.sql<{ document: { fees: string; host_stats: { cost: string }[] } }[]>`
      select document from finalize_documents where escrow_id = ${id.toString()}`;
    const costs = doc!.document.host_stats.reduce((s, x) => s + BigInt(x.cost), 0n);
    expect(event!.totalPayout).toBe(costs + BigInt(doc!.document.fees));
    if (refund !== undefined) expect(BigInt(refund)).toBe(event!.remainder);
    expect((await queryEscrow(h.chain, id)).escrow?.settled).toBe(true);
    return event!;
  };

  it('refuses bad batch input with a 400 naming the field, before anything starts', async () => {
    const cases: [object, string][] = [
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: [] }, 'escrow_ids'],
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: ['1'], filter: { inactive: true } }, 'filter'],
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: ['01'] }, 'escrow_ids[0]'],
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: ['7', '7'] }, 'escrow_ids[1]'],
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: ['99999999999999999999'] }, 'escrow_ids[0]'],
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: ['1'], batch_size: 0 }, 'batch_size'],
      [{ private_key_env: 'CREATOR_KEY', escrow_ids: ['1'], batch_size: 17 }, 'batch_size'],
      [{ private_key_env: 'CREATOR_KEY', filter: {} }, 'filter'],
      [{ private_key_env: 'CREATOR_KEY' }, 'escrow_ids'],
      [{ private_key_env: 'UNSET_VAR', escrow_ids: ['1'] }, 'private_key_env'],
      [{ escrow_ids: ['1'] }, 'private_key_env'],
    ];
    for (const [payload, param] of cases) {
      const res = await adminInject(app, 'POST', '/v1/admin/devshards/settle', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.param, JSON.stringify(payload)).toBe(param);
    }
    const [audit] = await h.sql`
      select action, status_code from admin_audit_log order by id desc limit 1`;
    expect(audit).toEqual({ action: 'POST /v1/admin/devshards/settle', status_code: 400 });
  });

  it('batch: 6 escrows, one unknown and one busy, streams 6 lines and a summary; the other 4 settle to the ngonka', async () => {
    const ids: bigint[] = [];
    for (let i = 0; i < 5; i++) ids.push(await createRegisteredEscrow(app, h.chainId));
    const unknown = ids.at(-1)! + 1000n;
    // The proxies count a request in flight in Redis: without force that escrow is busy.
    const busy = ids[2]!;
    await h.redis.redis.set(ctx.keys.escrowInFlight(busy), '1');
    const creator = h.account('creator-0').address;
    const before = h.devnet.chain.balanceOf(creator);

    const { res, lines } = await batch({
      private_key_env: 'CREATOR_KEY',
      escrow_ids: [...ids, unknown].map(String),
      batch_size: 3,
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(lines).toHaveLength(7);
    const summary = lines.pop();
    expect(summary).toEqual({
      summary: { total: 6, settled: 4, already_settled: 0, failed: 2, codes: { not_found: 1, busy: 1 } },
    });
    const byId = new Map(lines.map((l) => [l.escrow_id, l]));
    expect(byId.size).toBe(6);
    expect(byId.get(unknown.toString())).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(byId.get(busy.toString())).toMatchObject({
      ok: false,
      error: { code: 'busy', message: expect.stringMatching(/1 request\(s\) in flight/) },
    });
    expect(await state(busy)).toBe('active'); // never drained
    let refunds = 0n;
    for (const id of ids.filter((x) => x !== busy)) {
      const line = byId.get(id.toString());
      expect(line).toMatchObject({ ok: true, tx_hash: expect.stringMatching(/^[0-9A-F]{64}$/) });
      expect(await state(id)).toBe('settled');
      refunds += (await expectSettledToTheNgonka(id, line.tx_hash, line.refund)).remainder;
    }
    // Settlement is fee-exempt here: the creator gained exactly the four refunds.
    expect(h.devnet.chain.balanceOf(creator) - before).toBe(refunds);

    // A second batch sends nothing new: the settled ones are reported as such, one tx each.
    await h.redis.redis.del(ctx.keys.escrowInFlight(busy));
    const again = await batch({ private_key_env: 'CREATOR_KEY', escrow_ids: ids.map(String) });
    expect(again.lines.pop()).toMatchObject({ summary: { settled: 1, already_settled: 4, failed: 0 } });
    const commitments = await h.sql`
      select count(*)::int as n from chain_tx_commitments
       where kind = 'settle_escrow' and escrow_id in ${h.sql(ids.map(String))}`;
    expect(commitments).toEqual([{ n: 5 }]);
  }, 60_000);

  it('a filter selects unsettled inactive escrows; a client that leaves does not stop the batch', async () => {
    const kept = await createRegisteredEscrow(app, h.chainId);
    const [a, b] = [
      await createRegisteredEscrow(app, h.chainId),
      await createRegisteredEscrow(app, h.chainId),
    ];
    for (const id of [a, b]) await adminInject(app, 'POST', `/v1/admin/devshards/${id}/deactivate`);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const leaving = new AbortController();
    const res = await fetch(`${base}/v1/admin/devshards/settle`, {
      method: 'POST',
      headers: adminHeaders({ 'content-type': 'application/json' }),
      body: JSON.stringify({ private_key_env: 'CREATOR_KEY', filter: { inactive: true } }),
      signal: leaving.signal,
    });
    expect(res.status).toBe(200);
    leaving.abort(); // gone before any line
    await expect
      .poll(async () => [await state(a), await state(b)], { timeout: 30_000, interval: 100 })
      .toEqual(['settled', 'settled']);
    expect(await state(kept)).toBe('active');
  }, 60_000);

  it('a settler that cannot pay the settle fee: 402 naming the shortfall, nothing finalized; funded, the settle pays it', async () => {
    const id = await createRegisteredEscrow(app, h.chainId);
    const creator = h.account('creator-0').address;
    const original = h.devnet.chain.params().fee;
    // A chain that prices settlement (an enabled fee group lists it), and a creator with nothing spendable.
    h.devnet.chain.updateParams((p) => {
      p.fee.groups.push({ name: 'devshard', minGasPrice: 20n, typeUrls: [MSG_SETTLE_DEVSHARD_ESCROW] });
      p.fee.enabledFeeGroups.push('devshard');
    });
    h.devnet.faults.set({ insufficientFunds: [creator] });
    // Gas limit × the group's price (above the 10 ngonka/gas floor the tx builder never undercuts).
    const fee = 700_000n * 20n;
    try {
      const refused = await adminInject(app, 'POST', `/v1/admin/devshards/${id}/settle`, {
        private_key_env: 'CREATOR_KEY',
      });
      expect(refused.statusCode).toBe(402);
      expect(refused.json().error).toMatchObject({
        code: 'insufficient_funds',
        param: 'private_key_env',
        address: creator,
        required: fee.toString(),
        balance: '0',
        shortfall: fee.toString(),
      });
      const inBatch = await batch({ private_key_env: 'CREATOR_KEY', escrow_ids: [id.toString()] });
      expect(inBatch.lines[0]).toMatchObject({ ok: false, error: { code: 'insufficient_funds' } });
      // Nothing finalized or committed, still routed.
      expect(await state(id)).toBe('active');
      expect(await h.sql`select 1 from finalize_documents where escrow_id = ${id.toString()}`).toEqual([]);
      expect(
        await h.sql`select 1 from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`,
      ).toEqual([]);

      h.devnet.faults.set({ insufficientFunds: [] });
      const before = h.devnet.chain.balanceOf(creator);
      const { lines } = await batch({ private_key_env: 'CREATOR_KEY', escrow_ids: [id.toString()] });
      expect(lines[0]).toMatchObject({ ok: true });
      const event = await expectSettledToTheNgonka(id, lines[0].tx_hash, lines[0].refund);
      // The tx paid the fee the check asked for: the creator gained the refund less that fee.
      expect(h.devnet.chain.balanceOf(creator) - before).toBe(event.remainder - fee);
    } finally {
      h.devnet.faults.set({ insufficientFunds: [] });
      h.devnet.chain.updateParams((p) => {
        p.fee = original;
      });
    }
  }, 60_000);

  it('force: a request in flight at the owner is cut with its cause and the escrow settles to the ngonka', async () => {
    const id = await createRegisteredEscrow(app, h.chainId);
    const runtime = new OwnershipRuntime({
      sql: h.sql,
      redis: h.redis.redis,
      keys: ctx.keys,
      replicaId: 'replica-force',
      url: 'http://127.0.0.1:1',
      leaseTtlMs: 3_000,
      store: ctx.store,
      signerFor: creatorKeyFromEnv({ ...h.env, DEVSHARD_PRIVATE_KEY: h.env.CREATOR_KEY }),
      resolveHost: ctx.hosts.resolve,
      prepare: () => ctx.hosts.refresh(),
      session: { clock: devnetSessionClock(h.devnet) },
    });
    await runtime.start();
    try {
      await expect
        .poll(() => runtime.sessions.list().some((e) => e.escrowId === id && e.state === 'serving'), {
          timeout: 15_000,
          interval: 50,
        })
        .toBe(true);
      const ask = (content: string, onReceipt?: () => void) => {
        const bytes = new TextEncoder().encode(
          JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content }] }),
        );
        return runtime.sessions.infer(
          id,
          { body: bytes, model: QWEN_MODEL, inputLength: BigInt(bytes.length), maxTokens: 64n, stream: true },
          onReceipt ? { onReceipt } : {},
        );
      };
      expect((await ask('served before')).status).toBe('completed');
      // Every host holds its next answer back a minute after the receipt: the request stays in flight.
      for (const p of h.devnet.participants)
        await h.devnet.devshardHosts.setFault(p.address, {
          mode: 'slow',
          firstTokenMs: 60_000,
          remaining: 1,
        });
      let received!: () => void;
      const inFlight = new Promise<void>((resolve) => (received = resolve));
      const pending = ask('held back', () => received());
      await inFlight;

      const res = await adminInject(app, 'POST', `/v1/admin/devshards/${id}/settle`, {
        private_key_env: 'CREATOR_KEY',
        force: true,
      });
      expect(res.statusCode).toBe(202);
      const cut = await pending;
      expect(cut.cut).toBe('settle_forced');
      await expect.poll(() => state(id), { timeout: 30_000, interval: 100 }).toBe('settled');
      const [commitment] = await h.sql<{ tx_hash: string }[]>`
        select tx_hash from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`;
      await expectSettledToTheNgonka(id, commitment!.tx_hash);
      expect(runtime.sessions.owned().has(id)).toBe(false);
    } finally {
      await h.devnet.devshardHosts.clearFaults();
      await runtime.close();
    }
  }, 60_000);

  // Moves the chain's epochs: runs last in this file.
  it('a settle job that stops on a rule reports it by code: window_closed once the window has passed', async () => {
    const id = await createRegisteredEscrow(app, h.chainId);
    const escrowEpoch = (await queryEscrow(h.chain, id)).escrow!.epochIndex;
    h.devnet.epochs.advanceTo(escrowEpoch + 2n);
    const { lines } = await batch({ private_key_env: 'CREATOR_KEY', escrow_ids: [id.toString()] });
    expect(lines[0]).toMatchObject({
      escrow_id: id.toString(),
      ok: false,
      error: { code: 'window_closed', message: expect.stringMatching(/settle rule 9/) },
    });
    expect(lines[1]).toMatchObject({ summary: { failed: 1, codes: { window_closed: 1 } } });
    expect(await state(id)).toBe('active');
  }, 30_000);
});
