import { VARIABLES, type VariableSpec } from './variables.js';

/** The README's configuration table, generated from VARIABLES so the two cannot drift apart. */
export function configurationTable(): string {
  const rows = Object.entries(VARIABLES).map(([name, s]) => {
    const spec = s as VariableSpec<unknown>;
    const fallback = spec.required
      ? '*(required)*'
      : spec.default === undefined
        ? '—'
        : spec.default === ''
          ? '*(empty)*'
          : `\`${spec.default}\``;
    return `| \`${name}\` | ${fallback} | ${spec.meaning.replace(/\|/g, '\\|')} |`;
  });
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}
