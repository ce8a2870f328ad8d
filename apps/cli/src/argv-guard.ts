// Private keys are never accepted on the command line (gateway-spec.md §5.1.6: by env variable name
// or file only): a command-line value lands in shell history and in `ps` for every local user.
// This runs before commander, so a key-shaped value is refused even where commander would quote it
// back in an "unknown option" message. The refusal never repeats the value.
//
// Tx hashes have the same shape as keys (64 hex). Where a hash is expected (`--tx`, `tx status`) it
// must be upper case, as the chain and gwctl print it, and must not equal a key held in the
// environment: a pasted key would otherwise be sent to a node as a "hash".
import { looksLikePrivateKey } from '@gonka-gateway/chain';
import { UsageError } from './cli-io.js';

const SECRET_FLAG = /^--?(private[-_]?key|priv[-_]?key|key|secret|mnemonic|seed(-phrase)?)(=|$)/i;
const MNEMONIC = /^\s*([a-z]+\s+){11,23}[a-z]+\s*$/;
const UPPER_HASH = /^[0-9A-F]{64}$/;
const HASH_OPTIONS = new Set(['--tx', '--tx-hash']);

export const KEY_REFUSAL =
  'private keys are read only from an environment variable (--private-key-env NAME) or a file (--private-key-file PATH), never from the command line';

function hashPosition(argv: readonly string[], i: number, flag: string | undefined): boolean {
  if (flag !== undefined) return HASH_OPTIONS.has(flag);
  if (HASH_OPTIONS.has(argv[i - 1] ?? '')) return true;
  const status = argv.findIndex((a, j) => a === 'status' && argv[j - 1] === 'tx');
  return status !== -1 && i > status;
}

export function refuseSecretsInArgv(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): void {
  const envKeys = new Set(
    Object.values(env)
      .filter((v): v is string => typeof v === 'string' && looksLikePrivateKey(v))
      .map((v) => v.trim().replace(/^0x/i, '').toLowerCase()),
  );
  argv.forEach((arg, i) => {
    if (SECRET_FLAG.test(arg)) throw new UsageError(KEY_REFUSAL);
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const [flag, value] = eq === -1 ? [undefined, arg] : [arg.slice(0, eq), arg.slice(eq + 1)];
    if (MNEMONIC.test(value))
      throw new UsageError(`a mnemonic-shaped value was passed as an argument: ${KEY_REFUSAL}`);
    if (!looksLikePrivateKey(value)) return;
    const isHash = hashPosition(argv, i, flag) && UPPER_HASH.test(value) && !envKeys.has(value.toLowerCase());
    if (!isHash) {
      throw new UsageError(
        `a private-key-shaped value was passed as an argument (tx hashes are accepted only after --tx or "tx status", in upper case): ${KEY_REFUSAL}`,
      );
    }
  });
}

/** Commander quotes offending arguments in its errors; hide anything key-shaped. */
export function redactKeyShaped(text: string): string {
  return text.replace(/(0x)?[0-9a-fA-F]{64}/g, '[redacted]');
}
