import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// One project per workspace package, so `pnpm test` runs every package's tests and a
// failure names the package.
const project = (name: string, root: string) => ({
  extends: true as const,
  test: { name, root, include: ['**/*.test.ts'], exclude: ['**/node_modules/**', '**/dist/**'] },
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
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: [fileURLToPath(new URL('./tests/support/global-setup.ts', import.meta.url))],
    projects: [
      project('chain', 'packages/chain'),
      project('devshard', 'packages/devshard'),
      project('devnet', 'packages/devnet'),
      project('shared', 'packages/shared'),
      project('escrow-runtime', 'packages/escrow-runtime'),
      project('proxy', 'apps/proxy'),
      project('controller', 'apps/controller'),
      project('cli', 'apps/cli'),
      project('deploy', 'deploy'),
      project('e2e', 'tests'),
    ],
  },
});
