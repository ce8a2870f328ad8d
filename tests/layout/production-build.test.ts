// Test support stays out of what ships (CONTRIBUTING.md, "Layout and layering"): no test helper or
// benchmark is compiled into a package's production build. `pnpm build:prod` compiles each
// package's tsconfig.build.json, which leaves out src/testing and *.test.ts, so the `./testing`
// faces' dist files do not exist in the image. Production code importing a testing face would still
// compile (the import resolves through the `source` condition) and only fail when the program
// starts, so it is caught here.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '@gonka-gateway/deploy';
import { describe, expect, it } from 'vitest';

/** packages/<name> and apps/<name> folders that have a src/ (the units with a production build). */
const UNITS = ['packages', 'apps']
  .flatMap((top) => readdirSync(join(REPO_ROOT, top)).map((name) => `${top}/${name}`))
  .filter((dir) => existsSync(join(REPO_ROOT, dir, 'src')))
  .sort();

/** The .ts files of a unit's production build: src/ without src/testing/ and without tests. */
function productionSources(unit: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (
        entry.name.endsWith('.ts') &&
        !entry.name.endsWith('.test.ts') &&
        !entry.name.endsWith('.d.ts')
      )
        files.push(path);
    }
  };
  const src = join(REPO_ROOT, unit, 'src');
  for (const entry of readdirSync(src, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name === 'testing') continue;
    if (entry.isDirectory()) walk(join(src, entry.name));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
      files.push(join(src, entry.name));
  }
  return files;
}

/**
 * Module specifiers of a file that name a testing face or folder: `@scope/pkg/testing`,
 * `./testing/index.js`, `../testing/x.js` (static imports and re-exports, side-effect imports,
 * dynamic `import()`).
 */
export function testingImports(text: string): string[] {
  const specifiers = [
    ...text.matchAll(/\b(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g),
    ...text.matchAll(/\brequire\s*\(\s*['"]([^'"]+)['"]/g),
  ].map((m) => m[1]!);
  return specifiers.filter((s) => /(^|\/)testing(\/|$)/.test(s));
}

function readJson(path: string) {
  return JSON.parse(readFileSync(join(REPO_ROOT, path), 'utf8'));
}

describe('production build', () => {
  it('finds testing imports in every spelling (the scan below can fail)', () => {
    const sample = [
      "import { freePort } from '@gonka-gateway/shared/testing';",
      "export { fakeHosts } from './testing/index.js';",
      "import '../testing/setup.js';",
      "const t = await import('@gonka-gateway/devnet/testing');",
      "import type { X } from '../../testing/x.js';",
      "import { a } from './attesting.js';",
      "import { b } from '@gonka-gateway/devshard/session';",
    ].join('\n');
    expect(testingImports(sample)).toEqual([
      '@gonka-gateway/shared/testing',
      './testing/index.js',
      '../testing/setup.js',
      '@gonka-gateway/devnet/testing',
      '../../testing/x.js',
    ]);
  });

  it('no production source under apps/*/src or packages/*/src imports a testing face or folder', () => {
    const files = UNITS.flatMap(productionSources);
    expect(files.length).toBeGreaterThan(100);
    const offenders = files.flatMap((file) =>
      testingImports(readFileSync(file, 'utf8')).map((s) => `${relative(REPO_ROOT, file)}: ${s}`),
    );
    expect(offenders).toEqual([]);
  });

  it('every package and app has a tsconfig.build.json that leaves out src/testing and tests, and the root one references them all', () => {
    expect(UNITS).toEqual(expect.arrayContaining(['apps/proxy', 'apps/controller', 'packages/chain']));
    for (const unit of UNITS) {
      const config = readJson(`${unit}/tsconfig.build.json`);
      expect(config.extends, unit).toBe('./tsconfig.json');
      expect(config.exclude, unit).toEqual(['src/testing', 'src/**/*.test.ts']);
      // Production builds reference production builds only, so no test support comes in through them.
      for (const ref of config.references as { path: string }[])
        expect(ref.path, unit).toMatch(/\/tsconfig\.build\.json$/);
    }
    const root = readJson('tsconfig.build.json');
    expect(root.references.map((r: { path: string }) => r.path).sort()).toEqual(
      UNITS.map((u) => `${u}/tsconfig.build.json`).sort(),
    );
    expect(readJson('package.json').scripts['build:prod']).toMatch(/tsc -b tsconfig\.build\.json$/);
  });

  it('a package whose production build needs another lists it as a dependency, not a devDependency', () => {
    const nameOf = new Map(UNITS.map((u) => [readJson(`${u}/package.json`).name as string, u]));
    for (const unit of UNITS) {
      const deps = Object.keys(readJson(`${unit}/package.json`).dependencies ?? {});
      const referenced = (readJson(`${unit}/tsconfig.build.json`).references as { path: string }[]).map((r) =>
        join(unit, r.path, '..'),
      );
      for (const dir of referenced) {
        const name = [...nameOf].find(([, u]) => u === dir)?.[0];
        expect(deps, `${unit} builds against ${dir}`).toContain(name);
      }
    }
  });
});
