// OpenAI response bodies out of host chunk lines (spec §2.7): a non-streamed request gets one
// chat.completion, whether the host sent one `chat.completion` line or a run of chunks.

interface Choice {
  index: number;
  role: string;
  content: string;
  finishReason: string | null;
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** The `{...}` of a `data: {...}` line, or undefined for anything else. */
export function parseDataLine(line: Uint8Array): Record<string, unknown> | undefined {
  const text = Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('utf8');
  if (!text.startsWith('data:')) return undefined;
  const json = text.slice(5).trim();
  if (!json.startsWith('{')) return undefined;
  try {
    return JSON.parse(json) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Usage carried by a chunk or completion object, if any. */
export function usageOf(frame: Record<string, unknown> | undefined): Usage | undefined {
  const usage = frame?.usage;
  return usage && typeof usage === 'object' ? (usage as Usage) : undefined;
}

export function assembleCompletion(
  lines: readonly Uint8Array[],
  fallback: { id: string; model: string },
): Record<string, unknown> {
  const frames = lines.map(parseDataLine).filter((f): f is Record<string, unknown> => f !== undefined);
  const whole = frames.find((f) => f.object === 'chat.completion');
  if (whole) return whole;
  const choices = new Map<number, Choice>();
  let usage: Usage | undefined;
  let id = fallback.id;
  let model = fallback.model;
  let created = Math.floor(Date.now() / 1000);
  for (const f of frames) {
    if (typeof f.id === 'string') id = f.id;
    if (typeof f.model === 'string') model = f.model;
    if (typeof f.created === 'number') created = f.created;
    usage = usageOf(f) ?? usage;
    for (const c of (f.choices as Array<Record<string, unknown>> | undefined) ?? []) {
      const index = typeof c.index === 'number' ? c.index : 0;
      const choice = choices.get(index) ?? { index, role: 'assistant', content: '', finishReason: null };
      const delta = (c.delta ?? {}) as { role?: unknown; content?: unknown };
      if (typeof delta.role === 'string') choice.role = delta.role;
      if (typeof delta.content === 'string') choice.content += delta.content;
      if (typeof c.finish_reason === 'string') choice.finishReason = c.finish_reason;
      choices.set(index, choice);
    }
  }
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [...choices.values()].map((c) => ({
      index: c.index,
      message: { role: c.role, content: c.content },
      finish_reason: c.finishReason,
    })),
    ...(usage ? { usage } : {}),
  };
}
