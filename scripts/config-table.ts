// Prints the configuration table for README.md: `pnpm tsx --conditions=source scripts/config-table.ts`.
import { configurationTable } from '../packages/shared/src/config/config-table.js';

process.stdout.write(`${configurationTable()}\n`);
