// Every source file opens with a comment saying why it exists (CONTRIBUTING: comments explain why),
// and no two files of packages/*/src and apps/*/src open with the same first sentence: a reader who
// sees a file's opening line knows which file it is (CONTRIBUTING.md: names say what a thing is).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '@gonka-gateway/deploy';
import { describe, expect, it } from 'vitest';

/** Every .ts file under packages/<name>/src and apps/<name>/src, tests included. */
function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(path);
    }
  };
  for (const top of ['packages', 'apps']) {
    for (const pkg of readdirSync(join(REPO_ROOT, top), { withFileTypes: true })) {
      if (!pkg.isDirectory()) continue;
      const src = join(REPO_ROOT, top, pkg.name, 'src');
      try {
        walk(src);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
  return files.sort();
}

/**
 * The first sentence of the comment a file opens with (`//` lines or a `/** … *\/` block), whitespace
 * collapsed and lower-cased; undefined when the file opens with code. A sentence ends at `.`, `!` or
 * `?` followed by whitespace, or at the end of the comment.
 */
export function openingSentence(text: string): string | undefined {
  const lines = text.split('\n');
  let i = 0;
  if (lines[0]?.startsWith('#!')) i++;
  const comment: string[] = [];
  if (lines[i]?.trimStart().startsWith('/*')) {
    for (; i < lines.length; i++) {
      const line = lines[i] ?? '';
      comment.push(
        line
          .replace(/^\s*\/\*+/, '')
          .replace(/\*+\/\s*$/, '')
          .replace(/^\s*\*/, ''),
      );
      if (line.includes('*/')) break;
    }
  } else {
    for (; i < lines.length && lines[i]?.trimStart().startsWith('//'); i++) {
      comment.push((lines[i] ?? '').trimStart().replace(/^\/\/+/, ''));
    }
  }
  const prose = comment.join(' ').replace(/\s+/g, ' ').trim();
  if (prose === '') return undefined;
  const end = prose.search(/[.!?](\s|$)/);
  return (end === -1 ? prose : prose.slice(0, end + 1)).toLowerCase();
}

/**
 * The phrase a file opens with, up to the first punctuation, when it has three words or more ("The
 * finalize document" opening two files says too little about which is which). Shorter openings are
 * labels ("Test support:", "Property:", "§12 #1") and may repeat.
 */
export function openingPhrase(sentence: string): string | undefined {
  const phrase = sentence.split(/[.!?:;,(—–]/)[0]?.trim() ?? '';
  return phrase.split(' ').length >= 3 ? phrase : undefined;
}

function duplicatesOf(openings: ReadonlyArray<readonly [string | undefined, string]>): string[] {
  const byOpening = new Map<string, string[]>();
  for (const [opening, file] of openings) {
    if (opening === undefined) continue;
    byOpening.set(opening, [...(byOpening.get(opening) ?? []), file]);
  }
  return [...byOpening]
    .filter(([, files]) => files.length > 1)
    .map(([o, files]) => `${o}: ${files.join(', ')}`);
}

describe('opening sentences', () => {
  it('finds the first sentence of line and block comments', () => {
    expect(openingSentence('// Why this exists. More words.\n// Second line.\nimport x;')).toBe(
      'why this exists.',
    );
    expect(openingSentence('// One sentence\n// over two lines (§1.2), no stop\nconst a = 1;')).toBe(
      'one sentence over two lines (§1.2), no stop',
    );
    expect(openingSentence('/** Block comment: e.g.x. Next. */\nexport const b = 2;')).toBe(
      'block comment: e.g.x.',
    );
    expect(openingSentence('import { x } from "y";\n// later comment')).toBeUndefined();
  });

  it('finds the opening phrase of three words or more', () => {
    expect(openingPhrase('the finalize document (§8.3) and the chain message it becomes.')).toBe(
      'the finalize document',
    );
    expect(openingPhrase('test support: a session over in-process hosts.')).toBeUndefined();
  });

  it('no two source files of packages/*/src and apps/*/src open with the same sentence or phrase', () => {
    const openings = sourceFiles().map((file) => {
      const sentence = openingSentence(readFileSync(file, 'utf8'));
      return { file: relative(REPO_ROOT, file), sentence };
    });
    expect(duplicatesOf(openings.map(({ file, sentence }) => [sentence, file] as const))).toEqual([]);
    expect(
      duplicatesOf(
        openings.map(
          ({ file, sentence }) =>
            [sentence === undefined ? undefined : openingPhrase(sentence), file] as const,
        ),
      ),
    ).toEqual([]);
  });
});
