export { CliFailure, type CliIo, type CliWriter, EXIT, UsageError } from './cli-io.js';
export { buildProgram, runCli } from './run-cli.js';
