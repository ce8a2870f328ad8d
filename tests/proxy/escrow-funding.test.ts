// Funding verdicts end to end (apps/proxy pick-escrow.ts, devshard session funding.ts), one replica
// on the devnet with two escrows of the same model and deposit at different token prices: a request
// too big for the pricier escrow is served by the other one, which neither marks the first depleted
// nor spends anything on it; a request no escrow can fund is a 503 `insufficient_escrow_funds` with
// Retry-After and no nonce taken, whether the pool skips the escrows up front or the session of an
// escrow named in the path refuses it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, type InProcessReplica, ProxyStack, QWEN_MODEL, waitFor } from './proxy-stack.js';

/** 5 GNK less the create fee reserves ~249 tokens at this price (the first escrow)… */
const PRICEY = 20_000_000n;
/** …and ~499 tokens at this one (the second). */
const CHEAP = 10_000_000n;

let stack: ProxyStack;
let replica: InProcessReplica;
let pricey: bigint;
let cheap: bigint;

beforeAll(async () => {
  stack = await ProxyStack.start(2, { tokenPrices: [PRICEY, CHEAP] });
  [pricey, cheap] = stack.escrows.map((e) => e.id) as [bigint, bigint];
  replica = await stack.startInProcess('funding');
  await waitFor('both escrows owned', async () => (await stack.ownedBy(replica)).length === 2);
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

/**
 * A chat body whose reservation is about `inputChars / 4 + 128` tokens (admission.ts counts input
 * tokens as body bytes / 4) while the mock model bills one input token: a big reservation, a small
 * cost.
 */
const chat = (inputChars: number) =>
  JSON.stringify({
    model: QWEN_MODEL,
    messages: [{ role: 'user', content: 'a'.repeat(inputChars) }],
    max_tokens: 128,
  });
/** ~296 tokens: more than the pricey escrow can reserve, well within the cheap one. */
const TOO_BIG_FOR_PRICEY = chat(560);
/** ~606 tokens: more than either can reserve. */
const TOO_BIG_FOR_BOTH = chat(1_800);

const post = async (path: string, body: string) => {
  const res = await fetch(`${replica.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body,
  });
  const json = (await res.json()) as {
    error: { message: string; type: string; param: string | null; code: string };
  };
  return { status: res.status, headers: res.headers, json };
};

const poolStatus = (id: bigint) => stack.redis.redis.hget(stack.keys.poolEscrow(id), 'status');

describe('a request too big for one escrow of its model', () => {
  it('is served by another escrow; the first takes no nonce and is not marked depleted', async () => {
    const noncesBefore = (await stack.storedDiffs(pricey)).length;
    // Both escrows are idle and equal in load: without the funding check half would land on the pricey one.
    for (let i = 0; i < 4; i++) {
      const res = await post('/v1/chat/completions', TOO_BIG_FOR_PRICEY);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-devshard-id')).toBe(cheap.toString());
    }
    expect((await stack.storedDiffs(pricey)).length).toBe(noncesBefore);
    expect(await poolStatus(pricey)).toBe('active');
    const status = (await (await fetch(`${replica.url}/v1/status`)).json()) as {
      runtimes: { escrow_id: string; status: string }[];
    };
    expect(status.runtimes.find((r) => r.escrow_id === pricey.toString())?.status).toBe('serving');
  });
});

describe('a request no escrow of its model can fund', () => {
  it('is a 503 insufficient_escrow_funds with Retry-After, and no nonce is signed', async () => {
    const before = await stack.startedInferences();
    const res = await post('/v1/chat/completions', TOO_BIG_FOR_BOTH);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('10');
    expect(res.json.error).toMatchObject({
      type: 'api_error',
      code: 'insufficient_escrow_funds',
      param: 'max_tokens',
    });
    expect(res.json.error.message).toMatch(/none of the 2 escrows of model .* can fund this request/);
    expect(await stack.startedInferences()).toBe(before);
    expect([await poolStatus(pricey), await poolStatus(cheap)]).toEqual(['active', 'active']);
  });

  it('an escrow named in the path refuses it in its session before a nonce: the same 503', async () => {
    // The path names one escrow: no pool check runs, the session's funding verdict answers.
    const before = await stack.startedInferences();
    const res = await post(`/devshard/${pricey}/v1/chat/completions`, TOO_BIG_FOR_PRICEY);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('10');
    expect(res.json.error.code).toBe('insufficient_escrow_funds');
    expect(res.json.error.message).toMatch(/the 1 escrow of model .* cannot fund this request/);
    expect(await stack.startedInferences()).toBe(before);
    // Not depleted: a request that fits is served on it.
    const small = await post(`/devshard/${pricey}/v1/chat/completions`, chat(40));
    expect(small.status).toBe(200);
    expect(await poolStatus(pricey)).toBe('active');
  });
});
