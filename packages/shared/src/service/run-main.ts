import { ConfigError } from '../config/load-config.js';
import { InfrastructureError } from './infrastructure.js';

/** Exit status for configuration errors (sysexits EX_CONFIG): the process will not start as set up. */
export const EXIT_CONFIG = 78;
export const EXIT_UNAVAILABLE = 69;

/**
 * Runs a process entry point. Configuration and infrastructure problems print one line on stderr
 * (no stack, no secrets) and exit non-zero; anything else is a bug and prints its stack.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    if (err instanceof InfrastructureError) {
      process.stderr.write(`startup error: ${err.message}\n`);
      process.exit(EXIT_UNAVAILABLE);
    }
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
