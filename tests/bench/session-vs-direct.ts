// The devshard session path against the model it fronts, in the same run: requests through the
// gateway-side session (UserSession: compose, sign, write-ahead, HTTP to the executing host, receipt
// and state-signature checks) versus the same requests sent straight to the devnet's mock model.
// The host's protocol work (strict apply, receipt, state signature) is on the session path too, as
// it is on the real network; the model is the same process and code on both paths.
import { createChainClient, PrivateKey, queryParticipants, secp256k1BackendName } from '@gonka-gateway/chain';
import { countTokens, QWEN_MODEL } from '@gonka-gateway/devnet';
import {
  devshardBaseUrl,
  HttpHostTransport,
  InMemorySessionStore,
  UserSession,
} from '@gonka-gateway/devshard/session';
import { openBenchEscrow, startDevnetChild } from './devnet-child.js';
import { compare, formatLoad, type LoadResult, runLoad } from './load.js';

export interface Scenario {
  name: string;
  ttftMs: number;
  perTokenMs: number;
  concurrency: number;
  seconds: number;
  maxTokens: number;
}

const PROMPTS = ['Summarise the devnet in a sentence.', 'List three colours.', 'Why is the sky blue?'];

function chatBody(i: number, maxTokens: number): { bytes: Uint8Array; inputLength: bigint } {
  const content = `${PROMPTS[i % PROMPTS.length]} (${i})`;
  const json = JSON.stringify({
    model: QWEN_MODEL,
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    stream: false,
  });
  return { bytes: new TextEncoder().encode(json), inputLength: BigInt(countTokens(content) + 8) };
}

export async function sessionVsDirect(s: Scenario): Promise<{ lines: string[]; results: LoadResult[] }> {
  const creator = PrivateKey.random();
  const devnet = await startDevnetChild({
    BLOCK_INTERVAL_MS: '100',
    MODEL_TTFT_MS: String(s.ttftMs),
    MODEL_PER_TOKEN_MS: String(s.perTokenMs),
    DEVSHARD_PRIVATE_KEY: creator.exportHex(),
  });
  try {
    const client = createChainClient({ chainRest: devnet.urls.chainRest, publicApi: devnet.urls.node });
    const { escrowId, record, params } = await openBenchEscrow(client, creator);
    const store = new InMemorySessionStore();
    await store.create(record);
    const hosts = new Map(
      (await queryParticipants(client)).participants.map((p) => [p.address, p.inferenceUrl]),
    );
    const session = await UserSession.open({
      store,
      escrowId: escrowId.toString(),
      signer: creator,
      // BENCH_FETCH=1: host calls through fetch instead of undici.request, for comparison.
      transport: new HttpHostTransport({ signer: creator, ...(process.env.BENCH_FETCH ? { fetch } : {}) }),
      resolveHost: (address, v) => {
        const url = hosts.get(address);
        return url ? { address, baseUrl: devshardBaseUrl(url, v) } : undefined;
      },
      maxNonce: params.devshardEscrow.maxNonce,
    });

    let i = 0;
    const viaSession = async () => {
      const body = chatBody(i++, s.maxTokens);
      const result = await session.infer({
        body: body.bytes,
        model: QWEN_MODEL,
        inputLength: body.inputLength,
        maxTokens: BigInt(s.maxTokens),
        stream: false,
      });
      if (result.status !== 'completed' || !result.confirmed) {
        throw result.error ?? new Error(`inference ${result.nonce} ${result.status}`);
      }
    };
    const direct = async () => {
      const res = await fetch(`${devnet.urls.mlNode}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chatBody(i++, s.maxTokens).bytes,
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`direct: HTTP ${res.status}`);
    };

    // Warm up both paths (JIT, keep-alive sockets, host sessions bound on every host).
    await runLoad('warm-up', viaSession, { concurrency: s.concurrency, seconds: 1 });
    await runLoad('warm-up', direct, { concurrency: s.concurrency, seconds: 1 });
    const load = { concurrency: s.concurrency, seconds: s.seconds };
    const directResult = await runLoad('direct to the mock model', direct, load);
    const sessionResult = await runLoad('devshard session → host → mock model', viaSession, load);
    await session.close();
    const lines = [
      `${s.name}: model TTFT ${s.ttftMs} ms + ${s.perTokenMs} ms/token, max_tokens ${s.maxTokens}, ` +
        `${s.concurrency} concurrent, ${s.seconds} s each, secp256k1 ${secp256k1BackendName}`,
      `  ${formatLoad(directResult)}`,
      `  ${formatLoad(sessionResult)}`,
      compare(directResult, sessionResult),
    ];
    return { lines, results: [directResult, sessionResult] };
  } finally {
    await devnet.close();
  }
}
