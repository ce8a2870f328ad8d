import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// One project per workspace package, so `pnpm test` runs every package's tests and a
// failure names the package.
//
// `isolate: false` lets one worker run file after file without re-importing the workspace's
// TypeScript for each (most of a unit file's time is that import). Only packages whose tests leave no
// module state behind run that way: no vi.mock of a shared module, spies restored, nothing written
// to process.env. escrow-runtime mocks @gonka-gateway/shared in one file (a shared module cache
// would hand the other files the mock, or that file the real module), so it keeps isolation.
const project = (name: string, root: string, isolate = true) => ({
  extends: true as const,
  test: { name, root, isolate, include: ['**/*.test.ts'], exclude: ['**/node_modules/**', '**/dist/**'] },
});

export default defineConfig({
  plugins: [
    {
      // `source` resolves workspace packages to their TypeScript, in every Vite environment: the one
      // tests run in and the one vitest loads global setup in. Top-level `resolve.conditions` reaches
      // only the client environment, so the condition is set per environment here.
      name: 'workspace-source-condition',
      configEnvironment: () => ({ resolve: { conditions: ['source'], externalConditions: ['source'] } }),
    },
  ],
  test: {
    // The JSON report lets ./test fail a run in which no test ran.
    reporters: ['default', ['json', { outputFile: '.ci/vitest-report.json' }]],
    // At least two workers: vitest's default (one core left free) runs one file at a time on a
    // two-core machine, while most end-to-end files spend their time waiting on child processes and
    // the chain. Bigger machines keep the default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: [fileURLToPath(new URL('./tests/support/global-setup.ts', import.meta.url))],
    projects: [
      project('chain', 'packages/chain', false),
      project('devshard', 'packages/devshard', false),
      project('devnet', 'packages/devnet', false),
      project('shared', 'packages/shared', false),
      project('escrow-runtime', 'packages/escrow-runtime'),
      project('proxy', 'apps/proxy', false),
      project('controller', 'apps/controller', false),
      project('cli', 'apps/cli', false),
      project('deploy', 'deploy', false),
      project('e2e', 'tests', false),
    ],
  },
});
