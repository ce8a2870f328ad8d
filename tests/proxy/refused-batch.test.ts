// A refused write-ahead under a pipelined burst, through the real proxy (one replica in this process
// on the devnet, one escrow, real Postgres and Redis, the official openai client). The session
// composes nonce N+1 on the not-yet-durable tip while N's write-ahead is in flight, and diffs queued
// meanwhile go to the store in one group-commit statement (docs/architecture.md §2.3). A refused
// write voids every diff composed after it before anything of them is written or sent, so no nonce
// ever reaches a host with two different diffs (docs/devshard-protocol.md §7.1): the voided requests
// fail with a retryable 503, and the escrow keeps serving from its stored replica. Those queued behind
// the refused write cost nothing; the refused write itself ends with an unknown outcome and is
// appended again, identical, before anything else (append.ts), so its own requests' StartInferences
// may land after their clients were told to retry (they then resolve by timeout, §7.4).
import { diffToWire } from '@gonka-gateway/devshard';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

const BURST = 24;
/**
 * The fault refuses every write-ahead statement carrying a request payload from the REFUSED_ROW-th
 * after arming until the burst is over: a few requests are already durable, so the refused write has
 * diffs pipelined behind it, and it stays refused through the session's identical retries.
 */
const REFUSED_ROW = 5;

let stack: ProxyStack;
let replica: InProcessReplica;

beforeAll(async () => {
  stack = await ProxyStack.start(1);
  replica = await stack.startInProcess('refused-batch');
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
}, 90_000);

afterAll(async () => {
  await stack?.close();
});

type Outcome = { ok: true } | { ok: false; status: number | undefined; code: unknown; message: string };

async function ask(): Promise<Outcome> {
  try {
    const completion = await stack.client(replica).chat.completions.create({
      model: QWEN_MODEL,
      messages: [{ role: 'user', content: 'Explain write-ahead logging' }],
      max_tokens: 32,
    });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    return { ok: true };
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    return { ok: false, status: error.status, code: error.code, message: error.message };
  }
}

/**
 * Arms the fault in this test's own database (createTestDatabase). A request's diff and its payload are
 * written by the same write-ahead statement (postgres-session-store.ts), so a trigger raising on
 * session_payloads inserts from the REFUSED_ROW-th on refuses whole group-commit statements that hold
 * requests, and none of their session_diffs rows land. The session retries the identical write, then
 * fails its requests with write_failed and voids every diff queued behind it; the refused write itself
 * is an unknown outcome, appended again before anything else once the fault is gone
 * (packages/devshard/src/session/append.ts, write-ahead.ts). The counter is a sequence because nextval
 * is not rolled back with the refused statement.
 */
async function armFault(): Promise<void> {
  const sql = stack.storeSql;
  await sql`create sequence refused_batch_rows`;
  await sql.unsafe(`
    create function refused_batch_fault() returns trigger language plpgsql as $$
    begin
      if nextval('refused_batch_rows') >= ${REFUSED_ROW} then
        raise exception 'test fault: write-ahead of nonce % refused', new.inference_id;
      end if;
      return new;
    end $$`);
  await sql`create trigger refused_batch_fault before insert on session_payloads
    for each row execute function refused_batch_fault()`;
}

async function disarmFault(): Promise<bigint> {
  const sql = stack.storeSql;
  const [row] = await sql<{ n: string }[]>`select last_value::text as n from refused_batch_rows`;
  await sql`drop trigger if exists refused_batch_fault on session_payloads`;
  await sql`drop function if exists refused_batch_fault()`;
  await sql`drop sequence if exists refused_batch_rows`;
  return BigInt(row!.n);
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('a refused write-ahead in a pipelined burst', () => {
  it('voids the diffs after it: retryable 503s that cost nothing, no gap, no nonce signed twice', async () => {
    const escrow = stack.escrows[0]!;
    // Warm the session so the burst composes on a live tip.
    expect(await ask()).toEqual({ ok: true });
    const startedBefore = await stack.startedInferences();

    await armFault();
    let outcomes: Outcome[];
    try {
      outcomes = await Promise.all(Array.from({ length: BURST }, () => ask()));
    } finally {
      const rows = await disarmFault();
      // The fault fired: the refused row was reached.
      expect(rows).toBeGreaterThanOrEqual(BigInt(REFUSED_ROW));
    }

    // Every request either served content or got the retryable 503 of write_failed
    // (apps/proxy/src/error-map.ts: code service_unavailable, "the request could not be recorded").
    const refused = outcomes.filter((o) => !o.ok);
    for (const o of refused) {
      expect(o).toEqual({
        ok: false,
        status: 503,
        code: 'service_unavailable',
        message: expect.stringContaining('the request could not be recorded; try again'),
      });
    }
    expect(refused.length).toBeGreaterThan(0);
    const served = outcomes.length - refused.length;

    // The escrow keeps serving from its stored replica.
    for (let i = 0; i < 3; i++) expect(await ask()).toEqual({ ok: true });

    // Voided requests cost nothing: beyond one StartInference per served request, only the refused
    // write's own diffs may be stored (its outcome was unknown, so it is appended again), never the
    // diffs voided behind it, so fewer than the refused requests are stored.
    const unserved = (await stack.startedInferences()) - (startedBefore + served + 3);
    expect(unserved).toBeGreaterThanOrEqual(0);
    expect(unserved).toBeLessThan(refused.length);

    // The write-ahead log has consecutive nonces from 1, none stored twice.
    const stored = await stack.storedDiffs(escrow.id);
    expect(stored.map((d) => d.nonce)).toEqual(stored.map((_, i) => BigInt(i + 1)));

    // What every host applied at each nonce is the stored row: no nonce reached a host with a
    // diff composed on a voided tip (a host applies one diff per nonce, so a mismatch here is the
    // only way a second signature for a nonce could show).
    const byNonce = new Map(
      stored.map((d) => {
        const wire = diffToWire(d.diff);
        return [d.nonce, `${hex(wire.txs)}/${hex(wire.userSig)}`];
      }),
    );
    let checked = 0;
    for (const address of new Set(escrow.hosts)) {
      const host = stack.gateway.devnet.devshardHosts.session(address, escrow.id);
      if (!host) continue;
      for (let n = 1n; n <= host.latestNonce; n++) {
        const applied = host.applied(n);
        if (!applied) continue;
        checked++;
        expect({ n, applied: `${hex(applied.wire.txs)}/${hex(applied.wire.userSig)}` }).toEqual({
          n,
          applied: byNonce.get(n),
        });
      }
    }
    expect(checked).toBeGreaterThan(0);
  }, 60_000);
});
