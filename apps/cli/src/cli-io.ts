// What runCli needs from its process, passed in so tests drive the CLI in-process.
export interface CliWriter {
  write(chunk: string): unknown;
  /** A terminal (process.stdout/stderr set it): progress may redraw a line. */
  readonly isTTY?: boolean;
}

export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout: CliWriter;
  stderr: CliWriter;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Wall clock in ns (direct-request timestamps, tx timeouts); defaults to Date.now() × 10^6. */
  nowNs?: () => bigint;
  /** [0, 1) source for endpoint selection; defaults to Math.random. */
  random?: () => number;
}

/** Process exit codes: scripts branch on these. */
export const EXIT = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  /** A tx was sent but its outcome is not known yet: it may still be committed. Never "failed". */
  TX_UNKNOWN: 3,
} as const;

/** A user mistake in the command line; exits with EXIT.USAGE. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A failure already described; carries its exit code. */
export class CliFailure extends Error {
  override readonly name = 'CliFailure';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.ERROR,
  ) {
    super(message);
  }
}
