import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { base64 } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import { verifyDigest64 } from '../crypto/secp256k1.js';
import { type DirectSigningScheme, directRequestMessage } from './message.js';

// chain-and-network.md §4.7.
const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const body = utf8ToBytes(
  '{"model":"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8","messages":[{"role":"user","content":"Hello!"}]}',
);
const P1 = 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw';
const P2 = 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p';

const vectors: Array<[string, DirectSigningScheme, bigint, string, string, string]> = [
  [
    'V1',
    'body-sha256',
    1760000000000000000n,
    P1,
    '7789bd1adf1680f74531b8ba94d9cac108597f1db02c419b1677b8db8726b6bf',
    'VQjQ4cHlXc7i0pBpJcb/Xws71n9LoS3r0DdcvBOTmO4RDWhMqk+lioSIegyxk+uT8lWMB+geNllhql6bvlrHjw==',
  ],
  [
    'V2',
    'raw-body',
    1760000000000000000n,
    P1,
    '6021a8945ffcbe5dd091023230c352a59cb6dd547185888eba4ec1884109d91c',
    '28r7mifwUC8YaMpokxn//bkdkqWKo93TJwmS+aIefewy8lcqLUZr1x9atoBKnZm+xYTVD4FwaqXXgZ3ax/SBEg==',
  ],
  [
    'V3',
    'body-sha256',
    1760000000000000001n,
    P2,
    'e6ca8761127f41219fd09c6db0ea5b24b4f175d6b5524f749f10e7e8083ddbdb',
    'qgfCd2ExcYctR7xh87SbZ6/KdNjMI8cm6wLOhLO99/AuKPUHLFZpUooSZGDHg9G4zDoJXuqrFjm6AUQphKsS/Q==',
  ],
  [
    'V4',
    'raw-body',
    1760000000000000001n,
    P2,
    '5b761483f9f28f100f258f63291e8539d3862805c144091f65a606bcf3b0e495',
    'qtNlXG+CpRmU4RP7YyrB80Z60eJSrdoC4YPe/gAvQwZgeGz/zyjM3piKfFYVxN36jEUYU1sfSrz7UuGZpFBJYA==',
  ],
];

describe('direct request message bytes', () => {
  it('hashes the 98-byte body to the documented value', () => {
    expect(body.length).toBe(98);
    expect(bytesToHex(sha256(body))).toBe('05c11e2f059e58a3cdf1bafb703bc6dd25264fe77b4cdea1f38d43530e21fe9c');
  });

  for (const [name, scheme, ts, provider, digest, authorization] of vectors) {
    it(`${name}: ${scheme} message and signature match byte for byte`, () => {
      const message = directRequestMessage(scheme, body, ts, provider);
      expect(message.length).toBe(scheme === 'body-sha256' ? 64 + 19 + 44 : 98 + 19 + 44);
      expect(bytesToHex(sha256(message))).toBe(digest);
      const sig = key.signDigest64(sha256(message));
      expect(base64.encode(sig)).toBe(authorization);
      expect(verifyDigest64(sig, sha256(message), key.publicKey)).toBe(true);
    });
  }
});
