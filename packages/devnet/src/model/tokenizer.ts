// The one tokenizer of the mock model, used for prompts and completions alike, so usage counts are
// honest: a token is a run of letters/digits or a single other non-space character.
const TOKEN = /[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu;

export function countTokens(text: string): number {
  let count = 0;
  TOKEN.lastIndex = 0;
  while (TOKEN.exec(text) !== null) count++;
  return count;
}

export function tokenize(text: string): string[] {
  return text.match(TOKEN) ?? [];
}
