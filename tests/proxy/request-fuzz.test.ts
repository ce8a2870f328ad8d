// Fuzzing the chat route of a real proxy (in this process, on the devnet) with malformed and hostile
// requests (fast-check): wrong types, values out of range, huge and tiny numbers, unicode (lone
// surrogates included), long strings, deep nesting, unknown and duplicate keys, bytes that are not
// UTF-8 or not JSON, bodies over the limit, other content types. Whatever is sent, the answer is a
// 200 or a 4xx OpenAI JSON error: never a 5xx, a reset connection, a stack trace or a secret; and
// the escrow's nonce moves only for a 200 (apps/proxy README "Request policy"). 200 requests run in
// a few seconds; FUZZ_RUNS=3000 searches longer.
import { RULED_CHAT_PARAMETERS } from '@gonka-gateway/shared';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_KEY,
  type InProcessReplica,
  ProxyStack,
  QWEN_MODEL,
  type StatusBody,
  USER_KEY,
  waitFor,
} from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;

beforeAll(async () => {
  stack = await ProxyStack.start(1);
  // No idle flush: the escrow's nonce then moves only when a request takes one.
  replica = await stack.startInProcess('fuzz', {}, { flushIdleMs: 600_000 });
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
}, 90_000);

afterAll(async () => {
  await stack?.close();
});

interface Sent {
  readonly body: string | Uint8Array;
  readonly contentType: string | undefined;
}

/** Every parameter the proxy has a rule for, and the one it passes through unruled. */
const KNOWN = [...RULED_CHAT_PARAMETERS, 'chat_template_kwargs'];
const MESSAGE_FIELDS = ['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal', 'extra'] as const;

/** Strings of every kind: any code point (lone surrogates too), graphemes, control characters. */
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', '\u0000', '\ud800', 'a'.repeat(70_000), '__proto__', 'constructor'),
);
const deep = fc
  .integer({ min: 1, max: 150 })
  .map((d) => JSON.parse(`${'['.repeat(d)}${']'.repeat(d)}`) as unknown);
/** A value of any JSON type, or a number at or past the edges. */
const hostile = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  anyString,
  deep,
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, 2 ** 64, -0, 5e-324, 1e21, 0, -1, 0.5, 2.0000001, 3, 101, 1e-7),
);

const message = fc.oneof(
  fc.record({
    role: fc.constantFrom('user', 'system', 'developer'),
    content: fc.string({ unit: 'grapheme', maxLength: 40 }),
  }),
  fc.record({
    role: fc.constant('user'),
    content: fc.array(fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 20 }) }), {
      minLength: 1,
      maxLength: 3,
    }),
  }),
);
/** A request the policy accepts. */
const valid = fc.record(
  {
    model: fc.constant(QWEN_MODEL),
    messages: fc.array(message, { minLength: 1, maxLength: 3 }),
    max_tokens: fc.integer({ min: 1, max: 64 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
    seed: fc.integer(),
    stop: fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 4 }),
    stream: fc.boolean(),
  },
  { requiredKeys: ['model', 'messages', 'max_tokens'] },
);

const json = (value: unknown, contentType: string | undefined = 'application/json'): Sent => ({
  body: JSON.stringify(value),
  contentType,
});

const requests: fc.Arbitrary<Sent> = fc.oneof(
  { weight: 2, arbitrary: valid.map((b) => json(b)) },
  // A known parameter with a value of another type or out of range.
  {
    weight: 6,
    arbitrary: fc
      .tuple(valid, fc.constantFrom(...KNOWN), hostile)
      .map(([b, key, v]) => json({ ...b, [key]: v })),
  },
  // A message field with such a value.
  {
    weight: 4,
    arbitrary: fc
      .tuple(valid, fc.constantFrom(...MESSAGE_FIELDS), hostile)
      .map(([b, key, v]) =>
        json({ ...b, messages: [{ ...b.messages[0], [key]: v }, ...b.messages.slice(1)] }),
      ),
  },
  // An unknown key, any spelling.
  {
    weight: 2,
    arbitrary: fc.tuple(valid, anyString, hostile).map(([b, key, v]) => json({ ...b, [key]: v })),
  },
  // A key given twice, as raw text.
  {
    weight: 2,
    arbitrary: fc.tuple(valid, fc.constantFrom(...KNOWN), hostile).map(([b, key, v]) => ({
      body: `${JSON.stringify(b).slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(v)}}`,
      contentType: 'application/json',
    })),
  },
  // Text cut anywhere, bytes that are not UTF-8, or not JSON at all.
  {
    weight: 2,
    arbitrary: fc.tuple(valid, fc.nat()).map(([b, at]) => {
      const text = JSON.stringify(b);
      return { body: text.slice(0, at % text.length), contentType: 'application/json' };
    }),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(valid, fc.uint8Array({ minLength: 1, maxLength: 4 })).map(([b, bytes]) => {
      const text = JSON.stringify(b);
      const cut = text.indexOf('"content"') + 12;
      return {
        body: Buffer.concat([
          Buffer.from(text.slice(0, cut)),
          Buffer.from([0xff, ...bytes]),
          Buffer.from(text.slice(cut)),
        ]),
        contentType: 'application/json',
      };
    }),
  },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ maxLength: 200 }).map((body) => ({ body, contentType: 'application/json' })),
  },
  // Nesting far past the limit, as raw text (a million brackets).
  {
    weight: 1,
    arbitrary: fc.integer({ min: 60, max: 1_000_000 }).map((d) => ({
      body: `{"model":"${QWEN_MODEL}","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":${'['.repeat(d)}${']'.repeat(d)}}`,
      contentType: 'application/json',
    })),
  },
  // Over the body limit (4 MiB), rarely: the upload is real.
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(4 * 1024 * 1024 + 1, 5 * 1024 * 1024)
      .map((size) => json({ model: QWEN_MODEL, messages: [{ role: 'user', content: 'x'.repeat(size) }] })),
  },
  // Another content type, or none.
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        valid,
        fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml', undefined),
      )
      .map(([b, type]) => json(b, type)),
  },
);

/** What must never appear in an answer. */
const SECRETS = [ADMIN_KEY, USER_KEY];
const STACK_TRACE = /\bat [^\n]*\.(?:ts|js|mjs):\d+/;

async function nonce(): Promise<string | null> {
  const status = (await (await fetch(`${replica.url}/v1/status`)).json()) as StatusBody;
  return status.runtimes[0]?.nonce ?? null;
}

describe('the chat route under malformed and hostile requests', () => {
  it('answers a 200 or a 4xx OpenAI error, never a 5xx, a reset, a stack trace or a secret; the nonce moves only for 200s', async () => {
    const secrets = [...SECRETS, stack.gateway.creator.key.exportHex(), stack.db.url];
    let served = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(requests, async (sent) => {
        const before = await nonce();
        const res = await fetch(`${replica.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ADMIN_KEY}`,
            ...(sent.contentType ? { 'content-type': sent.contentType } : {}),
          },
          body: sent.body,
        });
        const text = await res.text();
        const after = await nonce();
        expect(res.status === 200 || (res.status >= 400 && res.status < 500), `${res.status} ${text}`).toBe(
          true,
        );
        expect(text).not.toMatch(STACK_TRACE);
        for (const secret of secrets) expect(text).not.toContain(secret);
        if (res.status === 200) {
          served++;
          expect(BigInt(after ?? 0)).toBeGreaterThan(BigInt(before ?? 0));
          return;
        }
        refused++;
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        const error = (JSON.parse(text) as { error: Record<string, unknown> }).error;
        expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
        expect(after, `the nonce moved for a ${res.status}: ${text}`).toBe(before);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
    );
    // Both kinds of answer were exercised.
    expect(served).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  }, 120_000);
});
