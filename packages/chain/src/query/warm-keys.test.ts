import { describe, expect, it } from 'vitest';
import { authzGrantsByGranterPath, MSG_START_INFERENCE_TYPE_URL, parseWarmKeyGrants } from './warm-keys.js';

const generic = (msg: string) => ({ '@type': '/cosmos.authz.v1beta1.GenericAuthorization', msg });
const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('parseWarmKeyGrants', () => {
  it('keeps unexpired MsgStartInference grantees, once each', () => {
    const page = parseWarmKeyGrants(
      {
        grants: [
          {
            granter: 'g',
            grantee: 'warm1',
            authorization: generic(MSG_START_INFERENCE_TYPE_URL),
            expiration: null,
          },
          {
            granter: 'g',
            grantee: 'warm2',
            authorization: generic(MSG_START_INFERENCE_TYPE_URL),
            expiration: '2027-01-01T00:00:00Z',
          },
          { grantee: 'warm1', authorization: generic(MSG_START_INFERENCE_TYPE_URL) },
          // Other messages, expired grants, odd shapes: left out without failing the answer.
          { grantee: 'other', authorization: generic('/inference.inference.MsgFinishInference') },
          {
            grantee: 'expired',
            authorization: generic(MSG_START_INFERENCE_TYPE_URL),
            expiration: '2025-06-01T00:00:00Z',
          },
          { grantee: 'bad-date', authorization: generic(MSG_START_INFERENCE_TYPE_URL), expiration: 'soon' },
          { grantee: 'send', authorization: { '@type': '/cosmos.bank.v1beta1.SendAuthorization' } },
          { authorization: generic(MSG_START_INFERENCE_TYPE_URL) },
          null,
          'junk',
        ],
        pagination: { next_key: null, total: '9' },
      },
      NOW,
    );
    expect(page).toEqual({ grantees: ['warm1', 'warm2'], nextKey: null });
  });

  it('reports the next page key; an empty or missing answer has no grantees', () => {
    expect(parseWarmKeyGrants({ grants: [], pagination: { next_key: 'AbC=' } }, NOW)).toEqual({
      grantees: [],
      nextKey: 'AbC=',
    });
    expect(parseWarmKeyGrants({}, NOW)).toEqual({ grantees: [], nextKey: null });
    expect(() => parseWarmKeyGrants({ grants: 'x' }, NOW)).toThrow();
    expect(authzGrantsByGranterPath('gonka1abc')).toBe('/cosmos/authz/v1beta1/grants/granter/gonka1abc');
  });
});
