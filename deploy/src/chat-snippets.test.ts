import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { chatSnippets, formatChatSnippets } from './chat-snippets.js';

const target = {
  gatewayUrl: 'http://127.0.0.1:18080',
  userKey: `sk-${'ab'.repeat(24)}`,
  modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
};

describe('chat snippets', () => {
  const s = chatSnippets(target);

  it('curl bodies are valid JSON; only the streamed one asks for a stream', () => {
    const body = (snippet: string) => JSON.parse(/-d '([^']+)'/.exec(snippet)![1]!);
    expect(body(s.curl)).toEqual({ model: target.modelId, messages: [{ role: 'user', content: 'Hello!' }] });
    expect(body(s.curlStream)).toMatchObject({ stream: true });
    expect(s.curlStream).toMatch(/^curl -N http:\/\/127\.0\.0\.1:18080\/v1\/chat\/completions/);
  });

  it('the Python and Node snippets are at most five lines and parse', () => {
    for (const code of [s.python, s.node]) expect(code.split('\n').length).toBeLessThanOrEqual(5);
    // Python: parsed by the interpreter itself when one is installed (the openai package need not be).
    let python = true;
    try {
      execFileSync('python3', ['--version'], { stdio: 'ignore' });
    } catch {
      python = false;
    }
    if (python) {
      execFileSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: s.python });
    }
    execFileSync(process.execPath, ['--check', '--input-type=module'], { input: s.node });
    expect(s.node).toContain(`baseURL: '${target.gatewayUrl}/v1'`);
  });

  it('the printed block names each snippet', () => {
    const text = formatChatSnippets(s);
    for (const part of [s.curl, s.curlStream, s.python, s.node]) expect(text).toContain(part);
  });
});
