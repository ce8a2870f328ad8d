import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../http/chain-client.js';
import { sendJson, startTestHttpServer, type TestHttpServer } from '../testing/test-http-server.js';
import { parseAccount, queryAccount } from './auth-account.js';
import { queryBalance, queryBalances } from './bank.js';
import { parseEscrowResponse, queryEscrow } from './escrow.js';
import { parseIdentity } from './identity.js';
import { parseNodeAccount, queryNodeAccount } from './node-account.js';
import { queryChainId } from './node-info.js';

const ADDR = 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw';
const PUBKEY_B64 = 'A6Xod/srlhlkDB++cmnVlnX/tzDyuVICYMCDFXDWDxYa';

describe('auth account shapes', () => {
  it('reads a base account whose pubkey is not yet published', () => {
    const a = parseAccount({
      account: {
        '@type': '/cosmos.auth.v1beta1.BaseAccount',
        address: ADDR,
        pub_key: null,
        account_number: '17',
        sequence: '0',
      },
    });
    expect(a).toMatchObject({ address: ADDR, accountNumber: 17n, sequence: 0n, pubKey: null });
  });

  it('reads a vesting account with a published key', () => {
    const a = parseAccount({
      account: {
        '@type': '/cosmos.vesting.v1beta1.ContinuousVestingAccount',
        base_vesting_account: {
          base_account: {
            address: ADDR,
            pub_key: { '@type': '/cosmos.crypto.secp256k1.PubKey', key: PUBKEY_B64 },
            account_number: '99',
            sequence: '5',
          },
          original_vesting: [{ denom: 'ngonka', amount: '1' }],
          end_time: '0',
        },
        start_time: '0',
      },
    });
    expect(a.accountNumber).toBe(99n);
    expect(a.pubKey).toHaveLength(33);
    expect(a.pubKeyType).toBe('/cosmos.crypto.secp256k1.PubKey');
  });

  it('reads a module account and defaults a missing account_number to 0', () => {
    const a = parseAccount({
      account: { '@type': '/cosmos.auth.v1beta1.ModuleAccount', base_account: { address: ADDR }, name: 'x' },
    });
    expect(a.accountNumber).toBe(0n);
  });
});

describe('escrow answer shapes', () => {
  it('reads found from the row when the found field is omitted', () => {
    expect(parseEscrowResponse({ escrow: { id: '9', amount: '1' } }).found).toBe(true);
    expect(parseEscrowResponse({ escrow: { id: '0' } })).toEqual({ found: false, escrow: null });
    expect(parseEscrowResponse({ escrow: { id: '9' }, found: false })).toEqual({
      found: false,
      escrow: null,
    });
    expect(() => parseEscrowResponse({ found: true })).toThrow(/escrow/);
  });

  it('types the seal settings the session must freeze, under either spelling, 0 when absent', () => {
    const row = (extra: Record<string, unknown>) =>
      parseEscrowResponse({ escrow: { id: '9', ...extra }, found: true }).escrow!;
    expect(
      row({
        inference_seal_grace_nonces: 160,
        inference_seal_grace_seconds: '3600',
        auto_seal_every_n_nonces: 150,
      }),
    ).toMatchObject({
      inferenceSealGraceNonces: 160n,
      inferenceSealGraceSeconds: 3600n,
      autoSealEveryNNonces: 150n,
    });
    expect(row({ seal_grace_nonces: 20, seal_grace_seconds: 60 })).toMatchObject({
      inferenceSealGraceNonces: 20n,
      inferenceSealGraceSeconds: 60n,
      autoSealEveryNNonces: 0n,
    });
  });
});

describe('node API shapes', () => {
  it('reads /v2/accounts with numbers beyond 2^53 kept exact by the client', () => {
    expect(
      parseNodeAccount({ pubkey: PUBKEY_B64, balance: '20000000000000001', denom: 'ngonka' }),
    ).toMatchObject({
      balance: 20_000_000_000_000_001n,
      denom: 'ngonka',
    });
    expect(parseNodeAccount({ balance: 5 }).pubKey).toBeNull();
  });

  it('reads both /v1/identity shapes', () => {
    const sdk = parseIdentity({
      data: { delegate_ta: { 'http://ta1:8000': 'gonka1ta1', 'http://ta2:8000': '' } },
    });
    expect(sdk.delegates).toEqual([
      { url: 'http://ta1:8000', address: 'gonka1ta1' },
      { url: 'http://ta2:8000', address: null },
    ]);
    const design = parseIdentity({
      address: ADDR,
      warm_key_address: 'gonka1warm',
      block: 100,
      timestamp: '2025-01-01T00:00:00Z',
      delegate_tas: [{ url: 'https://ta3', warm_key_address: 'gonka1w3' }],
    });
    expect(design.address).toBe(ADDR);
    expect(design.delegates).toEqual([{ url: 'https://ta3', address: 'gonka1w3' }]);
    expect(parseIdentity({ address: ADDR }).delegates).toEqual([]);
  });
});

describe('account, balance, escrow and chain id over HTTP', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startTestHttpServer((req, res) => {
      if (req.path === `/cosmos/auth/v1beta1/accounts/${ADDR}`) {
        return sendJson(res, 200, {
          account: {
            '@type': '/cosmos.auth.v1beta1.BaseAccount',
            address: ADDR,
            account_number: '3',
            sequence: '0',
          },
        });
      }
      if (req.path.startsWith('/cosmos/auth/v1beta1/accounts/'))
        return sendJson(res, 404, { code: 5, message: 'account not found' });
      if (req.path.startsWith('/cosmos/bank/v1beta1/balances/')) {
        return sendJson(res, 200, {
          balances: [
            { denom: 'ngonka', amount: '7000000000' },
            { denom: 'other', amount: '1' },
          ],
          pagination: { next_key: null, total: '2' },
        });
      }
      if (req.path === '/productscience/inference/inference/devshard_escrow/5') {
        return sendJson(res, 200, {
          escrow: {
            id: '5',
            creator: ADDR,
            amount: '5000000000',
            slots: [ADDR, ADDR],
            epoch_index: '42',
            app_hash: 'ab',
            settled: false,
            token_price: '1',
            model_id: 'Qwen/Q',
            create_devshard_fee: '10000',
            fee_per_nonce: '1000',
            validation_rate: 1000,
            vote_threshold_factor: 50,
            max_nonce: 1000000,
            refusal_timeout: '60',
            execution_timeout: '1920',
            default_seal_grace_nonces: 160,
          },
          found: true,
        });
      }
      if (req.path === '/productscience/inference/inference/devshard_escrow/6')
        return sendJson(res, 200, { found: false });
      if (req.path === '/cosmos/base/tendermint/v1beta1/node_info') {
        return sendJson(res, 200, {
          default_node_info: { network: 'gonka-devnet', version: '0.38' },
          application_version: {},
        });
      }
      if (req.path === `/v2/accounts/${ADDR}`)
        return sendJson(res, 200, { pubkey: PUBKEY_B64, balance: 12, denom: 'ngonka' });
      return sendJson(res, 404, { message: 'account not found' });
    });
  });
  afterAll(() => server.close());

  const client = () => createChainClient({ chainRest: server.url, publicApi: server.url });

  it('account: found, and null on 404', async () => {
    expect((await queryAccount(client(), ADDR))!.accountNumber).toBe(3n);
    expect(await queryAccount(client(), 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p')).toBeNull();
  });

  it('balances as bigints; one denom with a 0 default', async () => {
    expect(await queryBalances(client(), ADDR)).toEqual([
      { denom: 'ngonka', amount: 7_000_000_000n },
      { denom: 'other', amount: 1n },
    ]);
    expect(await queryBalance(client(), ADDR)).toBe(7_000_000_000n);
    expect(await queryBalance(client(), ADDR, 'missing')).toBe(0n);
  });

  it('escrow: found, found=false and 404 both read as absent', async () => {
    const found = await queryEscrow(client(), 5n);
    expect(found.found).toBe(true);
    expect(found.escrow).toMatchObject({
      id: 5n,
      amount: 5_000_000_000n,
      epochIndex: 42n,
      maxNonce: 1_000_000n,
      settled: false,
      validationRate: 1000,
    });
    expect(await queryEscrow(client(), 6n)).toEqual({ found: false, escrow: null });
    expect(await queryEscrow(client(), 7n)).toEqual({ found: false, escrow: null });
  });

  it('chain id from node_info', async () => {
    expect(await queryChainId(client())).toBe('gonka-devnet');
  });

  it('node account, and null on 404', async () => {
    expect((await queryNodeAccount(client(), ADDR))!.pubKey).toHaveLength(33);
    expect(await queryNodeAccount(client(), 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p')).toBeNull();
  });
});
