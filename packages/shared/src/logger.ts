import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

// Structured fields that may hold secrets, wherever they appear (request bodies, headers, errors).
const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-devshard-signature"]',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'private_key',
  '*.private_key',
  '*.*.private_key',
  'privateKey',
  '*.privateKey',
  'api_key',
  '*.api_key',
  'apiKey',
  '*.apiKey',
  'signature',
  '*.signature',
  '*.*.signature',
  'user_sig',
  '*.user_sig',
  'mnemonic',
  '*.mnemonic',
];

// Free text can carry secrets too (an error message quoting a header, say). API keys have a
// recognisable shape; private keys do not (64 hex looks like a tx hash), so the configured ones
// are scrubbed by value.
const API_KEY_SHAPE = /sk-(?:admin-)?[A-Za-z0-9_-]{16,}/g;
const BEARER = /(Bearer\s+)[^\s"\\]+/gi;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export interface LoggerOptions {
  level?: string;
  name?: string;
  /** Values to scrub from every line (configured keys, URL passwords). */
  secrets?: readonly string[];
  /** Defaults to stdout; tests pass a stream to inspect lines. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = [...new Set(options.secrets ?? [])].filter((s) => s.length >= 8);
  const secretPattern =
    secrets.length > 0
      ? new RegExp(
          secrets
            .sort((a, b) => b.length - a.length)
            .map(escapeRegExp)
            .join('|'),
          'g',
        )
      : null;
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      hooks: {
        streamWrite(line) {
          let out = line.replace(API_KEY_SHAPE, '[redacted]').replace(BEARER, '$1[redacted]');
          if (secretPattern) out = out.replace(secretPattern, '[redacted]');
          return out;
        },
      },
    },
    options.destination,
  );
}
