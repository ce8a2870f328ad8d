import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configurationTable } from './config-table.js';

describe('README configuration table', () => {
  it('is the generated table (regenerate: pnpm tsx --conditions=source scripts/config-table.ts)', () => {
    const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(configurationTable());
  });
});
