// The ready-to-paste snippets ./start prints once the demo escrow serves: curl without and with
// "stream": true, and the official `openai` client in Python and Node, each with the gateway URL,
// user key and model filled in, so they work at once. The e2e test
// (tests/processes/start-command.test.ts) runs the curls and the Node snippet as printed.

export interface SnippetTarget {
  gatewayUrl: string;
  userKey: string;
  modelId: string;
}

export interface ChatSnippets {
  curl: string;
  curlStream: string;
  python: string;
  node: string;
}

export function chatSnippets(t: SnippetTarget): ChatSnippets {
  const url = `${t.gatewayUrl}/v1/chat/completions`;
  const body = (stream: boolean) =>
    JSON.stringify({
      model: t.modelId,
      ...(stream ? { stream: true } : {}),
      messages: [{ role: 'user', content: 'Hello!' }],
    });
  const curl = (flag: string, stream: boolean) =>
    [
      `curl ${flag} ${url} \\`,
      `  -H 'authorization: Bearer ${t.userKey}' -H 'content-type: application/json' \\`,
      `  -d '${body(stream)}'`,
    ].join('\n');
  const messages = `[{"role": "user", "content": "Hello!"}]`;
  return {
    curl: curl('-s', false),
    curlStream: curl('-N', true),
    python: [
      'from openai import OpenAI',
      `client = OpenAI(base_url="${t.gatewayUrl}/v1", api_key="${t.userKey}")`,
      `r = client.chat.completions.create(model="${t.modelId}", messages=${messages})`,
      'print(r.choices[0].message.content)',
    ].join('\n'),
    node: [
      "import OpenAI from 'openai';",
      `const client = new OpenAI({ baseURL: '${t.gatewayUrl}/v1', apiKey: '${t.userKey}' });`,
      `const r = await client.chat.completions.create({ model: '${t.modelId}', messages: ${messages} });`,
      'console.log(r.choices[0].message.content);',
    ].join('\n'),
  };
}

/** The block ./start prints: each snippet under a one-line heading. */
export function formatChatSnippets(s: ChatSnippets): string {
  return [
    'a chat completion with the user key:',
    s.curl,
    '',
    'the same, streamed:',
    s.curlStream,
    '',
    'Python (pip install openai):',
    s.python,
    '',
    'Node (npm install openai; save as chat.mjs, run node chat.mjs):',
    s.node,
  ].join('\n');
}
