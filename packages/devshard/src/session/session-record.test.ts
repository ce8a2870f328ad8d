import { describe, expect, it } from 'vitest';
import { runtimeVersionFor } from './session-record.js';

describe('runtimeVersionFor (§12 #2)', () => {
  it('binds to the best supported approved name', () => {
    expect(runtimeVersionFor([{ name: 'v4.1' }, { name: 'v5' }, { name: 'v9' }])).toBe('v5');
    expect(runtimeVersionFor([{ name: 'v4' }, { name: 'v4.1' }])).toBe('v4.1');
    expect(runtimeVersionFor([{ name: 'v3' }])).toBe('v3');
  });

  it('has nothing to bind to when no approved name is supported, and v5 when none is required', () => {
    expect(runtimeVersionFor([{ name: 'v9' }, { name: 'v1' }])).toBeUndefined();
    expect(runtimeVersionFor([])).toBe('v5');
  });
});
