// The devshard protocol versions this implementation speaks (devshard-protocol.md §1, §11), in one
// place: the chain's `approved_versions[].name` are runtime names (`v5`, `v4.1`, …); a name belongs
// to a supported line when it is the line's name or starts with it and a dot. The composition
// profile of a line is state/profile.ts; which approved name a new escrow binds to is §12 #2.

/** Protocol lines this gateway speaks, best first (§11: v5 pinned; v4 profile also runs v3 tags). */
export const SUPPORTED_PROTOCOL_VERSIONS = ['v5', 'v4', 'v3'] as const;
export type SupportedProtocolVersion = (typeof SUPPORTED_PROTOCOL_VERSIONS)[number];

/** The supported line a runtime name or state-root tag belongs to (`v5.2` → `v5`), or undefined. */
export function supportedLineOf(name: string): SupportedProtocolVersion | undefined {
  return SUPPORTED_PROTOCOL_VERSIONS.find((line) => name === line || name.startsWith(`${line}.`));
}

/**
 * The runtime to bind new escrows to: the best approved name this implementation supports (§12 #2);
 * `v5` when the chain approves no list (an empty list means any version is accepted).
 */
export function runtimeVersionFor(approved: readonly { name: string }[]): string | undefined {
  if (approved.length === 0) return SUPPORTED_PROTOCOL_VERSIONS[0];
  for (const line of SUPPORTED_PROTOCOL_VERSIONS) {
    const match = approved
      .map((v) => v.name)
      .filter((name) => supportedLineOf(name) === line)
      .sort()
      .at(-1);
    if (match) return match;
  }
  return undefined;
}

/** `the chain approves v6; this gateway speaks v5, v4, v3`: both lists, for operator-facing errors. */
export function describeProtocolVersions(approved: readonly { name: string }[]): string {
  const names = approved.map((v) => v.name);
  const chain =
    names.length === 0 ? 'the chain approves any version' : `the chain approves ${names.join(', ')}`;
  return `${chain}; this gateway speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`;
}

/**
 * Why no new escrow can be bound (no approved name is supported), or undefined when one can. The
 * message names the approved and the supported versions.
 */
export function unsupportedProtocolReason(approved: readonly { name: string }[]): string | undefined {
  if (runtimeVersionFor(approved) !== undefined) return undefined;
  return `no devshard protocol version this gateway supports is approved: ${describeProtocolVersions(approved)}`;
}

/**
 * Why an escrow bound to runtime `version` cannot be served any more, or undefined when it can: hosts
 * serve only approved runtimes (`/devshard/{name}`, §4.1) and the chain settles only an approved tag
 * (§8.4), so a version dropped from a non-empty `approved_versions` list ends the escrow's service.
 */
export function unservableVersionReason(
  version: string,
  approved: readonly { name: string }[],
): string | undefined {
  if (approved.length === 0 || approved.some((v) => v.name === version)) return undefined;
  return `the escrow is bound to devshard protocol ${version}, which the chain does not approve: ${describeProtocolVersions(approved)}`;
}
