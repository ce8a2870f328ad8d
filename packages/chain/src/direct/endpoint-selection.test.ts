import { describe, expect, it } from 'vitest';
import type { Participant } from '../query/participants.js';
import {
  eligibleEndpoints,
  inferenceBaseUrl,
  parseEndpointOverride,
  pickEndpoint,
  withIdentityDelegate,
} from './endpoint-selection.js';

const P2 = 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p';
const part = (address: string, inferenceUrl: string): Participant => ({
  address,
  inferenceUrl,
  weight: 1n,
  models: [],
  raw: {},
});
const participants = [
  part('gonka1a', 'http://a:8000'),
  part('gonka1b', 'http://b:8000/v1/'),
  part('gonka1c', ''),
  part('', 'http://nobody:8000'),
  part('gonka1d', 'https://d.example'),
];

describe('eligibleEndpoints (chain-and-network.md §4.1)', () => {
  it('keeps participants with inference_url and index, appending /v1 once', () => {
    expect(eligibleEndpoints(participants)).toEqual([
      { baseUrl: 'http://a:8000/v1', transferAddress: 'gonka1a' },
      { baseUrl: 'http://b:8000/v1', transferAddress: 'gonka1b' },
      { baseUrl: 'https://d.example/v1', transferAddress: 'gonka1d' },
    ]);
  });

  it('drops excluded addresses and applies a non-empty transfer allowlist', () => {
    const out = eligibleEndpoints(participants, {
      excludedAddresses: ['gonka1a'],
      allowedTransferAddresses: ['gonka1a', 'gonka1d'],
    });
    expect(out.map((e) => e.transferAddress)).toEqual(['gonka1d']);
    expect(eligibleEndpoints(participants, { allowedTransferAddresses: [] })).toHaveLength(3);
  });
});

describe('pickEndpoint', () => {
  const eps = eligibleEndpoints(participants);
  it('picks uniformly with the injected random source', () => {
    expect(pickEndpoint(eps, () => 0).transferAddress).toBe('gonka1a');
    expect(pickEndpoint(eps, () => 0.5).transferAddress).toBe('gonka1b');
    expect(pickEndpoint(eps, () => 0.999999).transferAddress).toBe('gonka1d');
  });

  it('throws CHAIN_ERR_NO_ENDPOINT when nothing qualifies', () => {
    expect(() => pickEndpoint([])).toThrow(expect.objectContaining({ code: 'CHAIN_ERR_NO_ENDPOINT' }));
  });
});

describe('overrides and delegates', () => {
  it('parses url;transferAddress', () => {
    expect(parseEndpointOverride(`http://node:8000; ${P2}`)).toEqual({
      baseUrl: 'http://node:8000/v1',
      transferAddress: P2,
    });
    expect(() => parseEndpointOverride('http://node:8000')).toThrow(/url;transferAddress/);
    expect(() => parseEndpointOverride('http://node:8000;gonka1bad')).toThrow(/gonka1/);
    expect(() => parseEndpointOverride(`node:8000;${P2}`)).toThrow(/http/);
  });

  it('inferenceBaseUrl appends /v1 only when missing', () => {
    expect(inferenceBaseUrl('http://x')).toBe('http://x/v1');
    expect(inferenceBaseUrl('http://x/v1')).toBe('http://x/v1');
    expect(inferenceBaseUrl('http://x/api/v1/')).toBe('http://x/api/v1');
  });

  it('sends to a delegate URL but keeps signing the participant address', () => {
    const ep = { baseUrl: 'http://a:8000/v1', transferAddress: 'gonka1a' };
    const identity = {
      address: 'gonka1a',
      warmKeyAddress: null,
      delegates: [{ url: 'http://ta:9000', address: 'gonka1ta' }],
      raw: {},
    };
    expect(withIdentityDelegate(ep, identity)).toEqual({
      baseUrl: 'http://ta:9000/v1',
      transferAddress: 'gonka1a',
    });
    expect(withIdentityDelegate(ep, { ...identity, delegates: [] })).toBe(ep);
  });
});
