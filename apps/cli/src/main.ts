// Entry point of `pnpm gwctl …`: process wiring only; everything else is in runCli.
import { runCli } from './run-cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
