import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './run-cli.js';
import { gwctl } from './testing/cli-harness.js';

function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands
    .filter((c) => c.name() !== 'help')
    .flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}

const io = { env: {}, stdout: { write: () => true }, stderr: { write: () => true } };
const paths = commandPaths(buildProgram(io));

describe('gwctl --help', () => {
  it('lists every command of the CLI', () => {
    const names = paths.map((p) => p.join(' '));
    for (const expected of [
      'keys new',
      'address',
      'balance',
      'params',
      'escrow show',
      'escrow create',
      'escrow settle-status',
      'publish-pubkey',
      'sign-request',
      'send-request',
      'tx status',
    ]) {
      expect(names).toContain(expected);
    }
  });

  it('root help lists the commands and exits 0', async () => {
    const run = await gwctl(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: gwctl/);
    expect(run.stdout).toContain('--json');
  });

  for (const path of paths) {
    it(`${path.join(' ')} --help`, async () => {
      const run = await gwctl([...path, '--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Usage: gwctl ${path.join(' ')}`);
      expect(run.stderr).toBe('');
    });
  }
});

describe('usage errors', () => {
  it('an unknown command exits 2', async () => {
    const run = await gwctl(['frobnicate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command 'frobnicate'");
  });

  it('a missing required option exits 2', async () => {
    const run = await gwctl(['escrow', 'create', '--model', 'm']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--amount');
  });

  it('a bad argument is one line on stderr, exit 2', async () => {
    const run = await gwctl(['escrow', 'show', 'abc']);
    expect(run).toEqual({ code: 2, stdout: '', stderr: 'gwctl: escrow id must be a positive integer\n' });
  });
});
