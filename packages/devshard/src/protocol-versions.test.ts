import { describe, expect, it } from 'vitest';
import {
  describeProtocolVersions,
  runtimeVersionFor,
  SUPPORTED_PROTOCOL_VERSIONS,
  supportedLineOf,
  unservableVersionReason,
  unsupportedProtocolReason,
} from './protocol-versions.js';
import { profileForTag } from './state/profile.js';

const names = (...n: string[]) => n.map((name) => ({ name }));

describe('runtimeVersionFor (§12 #2)', () => {
  it('binds to the best supported approved name', () => {
    expect(runtimeVersionFor(names('v4.1', 'v5', 'v9'))).toBe('v5');
    expect(runtimeVersionFor(names('v4', 'v4.1'))).toBe('v4.1');
    expect(runtimeVersionFor(names('v3'))).toBe('v3');
  });

  it('has nothing to bind to when no approved name is supported, and v5 when none is required', () => {
    expect(runtimeVersionFor(names('v9', 'v1'))).toBeUndefined();
    expect(runtimeVersionFor(names('v50', 'v6'))).toBeUndefined();
    expect(runtimeVersionFor([])).toBe('v5');
  });
});

describe('supported protocol versions (§11)', () => {
  it('one list decides the lines, the profiles and the binding', () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(['v5', 'v4', 'v3']);
    expect(supportedLineOf('v5.2')).toBe('v5');
    expect(supportedLineOf('v50')).toBeUndefined();
    for (const line of SUPPORTED_PROTOCOL_VERSIONS) expect(() => profileForTag(line)).not.toThrow();
    expect(() => profileForTag('v6')).toThrow(/this gateway speaks v5, v4, v3/);
  });

  it('names the approved and the supported versions when nothing can be bound or served', () => {
    expect(describeProtocolVersions(names('v6'))).toBe(
      'the chain approves v6; this gateway speaks v5, v4, v3',
    );
    expect(unsupportedProtocolReason(names('v6', 'v7'))).toMatch(
      /the chain approves v6, v7; this gateway speaks v5, v4, v3$/,
    );
    expect(unsupportedProtocolReason(names('v6', 'v5'))).toBeUndefined();
    expect(unservableVersionReason('v5', names('v6'))).toMatch(
      /bound to devshard protocol v5, which the chain does not approve: the chain approves v6; this gateway speaks v5, v4, v3/,
    );
    expect(unservableVersionReason('v5', names('v6', 'v5'))).toBeUndefined();
    expect(unservableVersionReason('v5', [])).toBeUndefined();
  });
});
