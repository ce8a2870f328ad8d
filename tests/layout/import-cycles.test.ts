// No source module reaches itself through its own relative imports (type imports included): each
// file of apps/*/src and packages/*/src can be read knowing only what it imports, and the session's
// state owners (packages/devshard/src/session) stay a layered graph rather than one knot.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { REPO_ROOT } from '@gonka-gateway/deploy';
import { describe, expect, it } from 'vitest';

/** Every non-test .ts module under apps/<name>/src and packages/<name>/src. */
function modules(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/(?<!\.test|\.d)\.ts$/.test(entry.name)) files.push(path);
    }
  };
  for (const top of ['apps', 'packages']) {
    for (const pkg of readdirSync(join(REPO_ROOT, top), { withFileTypes: true })) {
      if (!pkg.isDirectory()) continue;
      try {
        walk(join(REPO_ROOT, top, pkg.name, 'src'));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
  return files;
}

/** file → the files its relative `from './x.js'` / `import('./x.js')` specifiers name. */
export function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const m of read(file).matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)\.js['"]/g)) {
      const target = resolve(dirname(file), `${m[1]}.ts`);
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** The graph's cycles as strongly connected components of more than one module (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('import graph', () => {
  it('finds a cycle when there is one (the check itself)', () => {
    const files = ['/a/x.ts', '/a/y.ts', '/a/z.ts'];
    const text: Record<string, string> = {
      '/a/x.ts': "import { y } from './y.js';",
      '/a/y.ts': "import type { Z } from './z.js';",
      '/a/z.ts': "export type Z = import('./x.js').X;",
    };
    expect(cycles(importGraph(files, (f) => text[f]!))).toEqual([['/a/x.ts', '/a/y.ts', '/a/z.ts']]);
    text['/a/z.ts'] = 'export type Z = number;';
    expect(cycles(importGraph(files, (f) => text[f]!))).toEqual([]);
  });

  it('has no cycle among the modules of apps/*/src and packages/*/src', () => {
    const files = modules();
    expect(files.length).toBeGreaterThan(100);
    const found = cycles(importGraph(files, (f) => readFileSync(f, 'utf8'))).map((c) =>
      c.map((f) => relative(REPO_ROOT, f)),
    );
    expect(found).toEqual([]);
  });
});
