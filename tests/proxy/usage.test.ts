// The usage ledger end to end (docs/keys-and-usage.md, "The usage ledger"): requests through one
// proxy replica on the devnet land in usage_records once each, through the Redis stream and the
// replica's consumer group, and each row's cost becomes final and equal to what settlement bills
// for its nonce (the ledger recomputed from the stored diffs, tests/devshard-devnet/ledger.ts). A
// request a forced settle cuts is recorded with the cause. The cut drains the escrow: it runs last.
import { orderEscrowCut } from '@gonka-gateway/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerOf } from '../devshard-devnet/ledger.js';
import {
  ADMIN_KEY,
  type InProcessReplica,
  ProxyStack,
  QWEN_MODEL,
  type StatusBody,
  waitFor,
} from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;

beforeAll(async () => {
  stack = await ProxyStack.start(1);
  replica = await stack.startInProcess('usage', {}, { usageReconcileEveryMs: 100 });
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
}, 90_000);

afterAll(async () => {
  await stack?.close();
});

interface Row {
  request_id: string;
  key_id: string;
  model: string;
  escrow_id: string;
  nonce: string;
  nonces: string;
  input_tokens: number;
  output_tokens: number;
  cost: string | null;
  cost_final: boolean;
  status: number;
  total_ms: number;
  ttft_ms: number | null;
  replica_id: string;
}

describe('usage records', () => {
  it('writes one row per request with the cost settlement bills for its nonce', async () => {
    const client = stack.client(replica);
    const messages = [{ role: 'user' as const, content: 'Count the ngonka' }];
    const requestIds: string[] = [];
    const streamed = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const stream = i % 2 === 1;
      if (stream) {
        const { data, response } = await client.chat.completions
          .create({ model: QWEN_MODEL, messages, max_tokens: 48, stream: true })
          .withResponse();
        for await (const _ of data) {
          // drain
        }
        requestIds.push(response.headers.get('x-request-id')!);
        streamed.add(requestIds.at(-1)!);
      } else {
        const { response } = await client.chat.completions
          .create({ model: QWEN_MODEL, messages, max_tokens: 48 })
          .withResponse();
        requestIds.push(response.headers.get('x-request-id')!);
      }
    }
    const sql = stack.storeSql;
    const rows = () =>
      sql<Row[]>`select request_id, key_id, model, escrow_id::text, nonce::text, nonces, input_tokens,
        output_tokens, cost::text, cost_final, status, total_ms, ttft_ms, replica_id
        from usage_records order by nonce`;
    // The Finish rides in the next diff (next request or the idle flush); the reconciler then
    // finalizes the row from the owner's session.
    await waitFor('every usage row final', async () => {
      const r = await rows();
      return r.length === requestIds.length && r.every((x) => x.cost_final);
    });
    const written = await rows();
    expect(written.map((r) => r.request_id).sort()).toEqual([...requestIds].sort());

    const escrow = stack.escrows[0]!;
    const ledger = ledgerOf(escrow.row, await stack.storedDiffs(escrow.id));
    let billed = 0n;
    for (const r of written) {
      const entry = ledger.inferences.get(BigInt(r.nonce));
      expect(entry?.fate).toBe('finished');
      expect(r).toMatchObject({
        escrow_id: escrow.id.toString(),
        nonces: r.nonce,
        model: QWEN_MODEL,
        status: 200,
        replica_id: replica.replicaId,
        cost: entry!.cost.toString(),
      });
      // A stream without a usage frame counts chunks (serve/attempt-race.ts), not the Finish's tokens.
      if (!streamed.has(r.request_id)) expect(r.output_tokens).toBe(Number(entry!.outputTokens));
      expect(entry!.cost).toBeGreaterThan(0n);
      expect(entry!.cost).toBeLessThan(entry!.reserved);
      // Time to first token is the first byte to the client: only a stream has one before the end.
      if (streamed.has(r.request_id)) expect(r.total_ms).toBeGreaterThanOrEqual(r.ttft_ms!);
      else expect(r.ttft_ms).toBeNull();
      billed += entry!.cost;
    }
    // Every inference of this escrow is one of these requests: the ledger's charges are the rows'.
    let charged = 0n;
    for (const e of ledger.inferences.values()) charged += e.cost;
    expect(billed).toBe(charged);
    expect(ledger.inferences.size).toBe(requestIds.length);
  }, 60_000);

  it('a request a forced settle cuts is answered 503 and its record says why: cancelled, cut_settle_forced', async () => {
    const devnet = stack.gateway.devnet;
    const escrow = stack.escrows[0]!;
    // Every host holds its next answer back after the receipt: the request stays in flight.
    for (const p of devnet.participants)
      await devnet.devshardHosts.setFault(p.address, { mode: 'slow', firstTokenMs: 60_000, remaining: 1 });
    try {
      const asked = fetch(`${replica.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: QWEN_MODEL,
          messages: [{ role: 'user', content: 'Cut me off' }],
          max_tokens: 48,
          stream: true,
        }),
      });
      const inFlight = async () =>
        ((await (await fetch(`${replica.url}/v1/status`)).json()) as StatusBody).runtimes[0]?.in_flight;
      await waitFor('the request in flight', async () => ((await inFlight()) ?? 0) >= 1);
      // What a forced settle does first (controller escrow/finalize.ts): the cut order, then the drain.
      await orderEscrowCut(stack.redis.redis, stack.keys, escrow.id);
      await stack.storeSql`update escrows set state = 'draining' where escrow_id = ${escrow.id.toString()}`;
      const res = await asked;
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
      const requestId = res.headers.get('x-request-id')!;
      await waitFor(
        'its usage row',
        async () =>
          (await stack.storeSql`select 1 from usage_records where request_id = ${requestId}`).length === 1,
      );
      const [row] = await stack.storeSql`
        select status, attempts from usage_records where request_id = ${requestId}`;
      expect(row).toMatchObject({
        status: 503,
        attempts: [{ outcome: 'cancelled', error: 'cut_settle_forced', escrow_id: escrow.id.toString() }],
      });
    } finally {
      await devnet.devshardHosts.clearFaults();
    }
  }, 30_000);
});
