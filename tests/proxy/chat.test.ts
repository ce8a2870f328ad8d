// Issue 11 end to end, one replica in this process on the devnet: the official openai client against
// the proxy, streaming and not; every 4xx has the OpenAI shape and takes no nonce; access modes,
// max_tokens, admission, disabled mode, /v1/models, /v1/status, /healthz, /readyz; a client that
// leaves before the first byte, mid-stream or after the last chunk leaves the session consistent
// with the Finish folded in.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerOf } from '../devshard-devnet/ledger.js';
import {
  ADMIN_KEY,
  type InProcessReplica,
  ProxyStack,
  QWEN_MODEL,
  USER_KEY,
  waitFor,
} from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;

beforeAll(async () => {
  stack = await ProxyStack.start(2);
  replica = await stack.startInProcess('solo', { GATEWAY_MAX_CONCURRENT_REQUESTS: '3' });
  await waitFor('both escrows owned', async () => (await stack.ownedBy(replica)).length === 2);
}, 90_000);

afterAll(async () => {
  await stack?.close();
});

const messages = [{ role: 'user' as const, content: 'Tell me about fencing tokens' }];

describe('chat completions through the proxy', () => {
  it('answers a non-streamed completion with usage', async () => {
    const before = await stack.diffCount();
    const completion = await stack.client(replica).chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 64,
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(await stack.diffCount()).toBeGreaterThan(before);
  });

  it('streams chunks and ends with [DONE]', async () => {
    const stream = await stack.client(replica).chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });
});
