import { describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import { DirectRequestSigner } from './direct-signer.js';
import { buildDirectHeaders } from './headers.js';
import type { DirectSigningScheme } from './message.js';

// chain-and-network.md §4.7.
const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const body = new TextEncoder().encode(
  '{"model":"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8","messages":[{"role":"user","content":"Hello!"}]}',
);
const P1 = 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw';
const P2 = 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p';
export const DIRECT_VECTORS: Array<[string, DirectSigningScheme, bigint, string, string]> = [
  [
    'V1',
    'body-sha256',
    1760000000000000000n,
    P1,
    'VQjQ4cHlXc7i0pBpJcb/Xws71n9LoS3r0DdcvBOTmO4RDWhMqk+lioSIegyxk+uT8lWMB+geNllhql6bvlrHjw==',
  ],
  [
    'V2',
    'raw-body',
    1760000000000000000n,
    P1,
    '28r7mifwUC8YaMpokxn//bkdkqWKo93TJwmS+aIefewy8lcqLUZr1x9atoBKnZm+xYTVD4FwaqXXgZ3ax/SBEg==',
  ],
  [
    'V3',
    'body-sha256',
    1760000000000000001n,
    P2,
    'qgfCd2ExcYctR7xh87SbZ6/KdNjMI8cm6wLOhLO99/AuKPUHLFZpUooSZGDHg9G4zDoJXuqrFjm6AUQphKsS/Q==',
  ],
  [
    'V4',
    'raw-body',
    1760000000000000001n,
    P2,
    'qtNlXG+CpRmU4RP7YyrB80Z60eJSrdoC4YPe/gAvQwZgeGz/zyjM3piKfFYVxN36jEUYU1sfSrz7UuGZpFBJYA==',
  ],
];

describe('direct request headers (§4.4) against vectors V1–V4', () => {
  for (const [name, scheme, ts, provider, authorization] of DIRECT_VECTORS) {
    it(`${name}: ${scheme}`, () => {
      const headers = buildDirectHeaders({ key, scheme, body, timestampNs: ts, providerAddress: provider });
      expect(headers).toEqual({
        Authorization: authorization,
        'Content-Type': 'application/json',
        'X-Requester-Address': P1,
        'X-Timestamp': ts.toString(),
      });
      expect(Object.keys(headers)).not.toContain('X-Transfer-Address');
      const viaSigner = new DirectRequestSigner(key, { scheme }).sign(body, provider, { timestampNs: ts });
      expect(viaSigner.headers).toEqual(headers);
    });
  }
});

describe('DirectRequestSigner timestamps (§4.5)', () => {
  it('are max(nowNs, last + 1): unique under a frozen or backward clock', () => {
    let now = 1_760_000_000_000_000_000n;
    const signer = new DirectRequestSigner(key, { nowNs: () => now });
    const a = signer.sign(body, P2).timestampNs;
    const b = signer.sign(body, P2).timestampNs;
    now -= 1_000n;
    const c = signer.sign(body, P2).timestampNs;
    now += 1_000_000n;
    const d = signer.sign(body, P2).timestampNs;
    expect(a).toBe(1_760_000_000_000_000_000n);
    expect([b - a, c - b]).toEqual([1n, 1n]);
    expect(d).toBe(now);
  });

  it('an explicit timestamp advances the counter, so identical bodies never replay', () => {
    const signer = new DirectRequestSigner(key, { nowNs: () => 5n });
    signer.sign(body, P2, { timestampNs: 100n });
    const next = signer.sign(body, P2);
    expect(next.timestampNs).toBe(101n);
  });

  it('defaults to body-sha256 and rejects unknown schemes and bad providers', () => {
    expect(new DirectRequestSigner(key).scheme).toBe('body-sha256');
    expect(() => new DirectRequestSigner(key, { scheme: 'hex' as DirectSigningScheme })).toThrow(/scheme/);
    expect(() => new DirectRequestSigner(key).sign(body, 'cosmos1abc')).toThrow(/provider address/);
  });
});
