import { defineConfig } from 'drizzle-kit';

// Run from packages/shared: `pnpm db:generate --name <change>` at the repository root.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './migrations',
});
