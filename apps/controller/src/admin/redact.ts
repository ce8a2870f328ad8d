// What the audit log and logs may keep of an admin request body: every field whose name says it
// holds a secret is replaced, at any depth. `private_key_env` is the NAME of a variable, not a
// secret, and is kept (it says which key was used).
const SECRET_FIELD = /(private_key|secret|password|mnemonic|api_key|token)$/i;
const KEPT = new Set(['private_key_env']);

export const REDACTED = '[redacted]';

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_FIELD.test(k) && !KEPT.has(k) ? REDACTED : redactSecrets(v);
  }
  return out;
}
