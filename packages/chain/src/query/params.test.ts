import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainError } from '../errors.js';
import { createChainClient } from '../http/chain-client.js';
import { sendJson, startTestHttpServer, type TestHttpServer } from '../testing/test-http-server.js';
import { INFERENCE_PARAMS_PATH, parseInferenceParams, queryInferenceParams } from './params.js';

// Shaped like a live proto-JSON answer: int64/uint64 as strings, uint32 as numbers, fields this
// package does not know, and default-valued fields omitted.
export const REALISTIC_PARAMS = {
  params: {
    epoch_params: {
      epoch_length: '17280',
      epoch_shift: '120',
      poc_stage_duration: '60',
      poc_validation_delay: '10',
      poc_validation_duration: '40',
      set_new_validators_delay: '5',
      inference_validation_cutoff: '20',
    },
    validation_params: {
      timestamp_expiration: '60',
      timestamp_advance: '30',
      false_positive_rate: { value: '5', exponent: -2 },
    },
    devshard_escrow_params: {
      min_amount: '5000000000',
      max_amount: '10000000000',
      max_escrows_per_epoch: 500000,
      group_size: 16,
      allowed_creator_addresses: ['gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw'],
      token_price: '1',
      max_nonce: 1000000,
      devshard_requests_enabled: true,
      default_seal_grace_nonces: 160,
      default_inference_seal_grace_seconds: 3600,
      default_auto_seal_every_n_nonces: 150,
      create_devshard_fee: '10000',
      fee_per_nonce: '1000',
      refusal_timeout: '60',
      execution_timeout: '1920',
      validation_rate: 1000,
      vote_threshold_factor: 50,
      approved_versions: [{ name: 'v1', binary: 'https://example/devshard-v1', sha256: '15f7' }],
      some_future_field: { nested: true },
    },
    fee_params: {
      min_gas_price_ngonka: '0',
      base_validation_gas: '500000',
      enabled_fee_groups: ['cosmos'],
      groups: [
        { name: 'cosmos', min_gas_price: '10', msgs: [{ type_url: '/cosmos.bank.v1beta1.MsgSend' }] },
        {
          name: 'epoch',
          min_gas_price: '1',
          msgs: [{ type_url: '/inference.inference.MsgPoCV2StoreCommit' }],
        },
      ],
    },
    transfer_agent_access_params: {
      allowed_transfer_addresses: ['gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p'],
    },
    developer_access_params: { until_block_height: '2500000', allowed_developer_addresses: [] },
    bandwidth_limits_params: { estimated_limits_per_block_kb: '10240' },
  },
};

describe('parseInferenceParams', () => {
  it('reads strings for int64, numbers for uint32 and ignores unknown fields', () => {
    const p = parseInferenceParams(REALISTIC_PARAMS);
    expect(p.devshardEscrow.minAmount).toBe(5_000_000_000n);
    expect(p.devshardEscrow.maxEscrowsPerEpoch).toBe(500_000n);
    expect(p.devshardEscrow.groupSize).toBe(16);
    expect(p.devshardEscrow.maxNonce).toBe(1_000_000n);
    expect(p.devshardEscrow.sealGraceNonces).toBe(160n);
    expect(p.devshardEscrow.allowedCreatorAddresses).toEqual([
      'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw',
    ]);
    expect(p.devshardEscrow.approvedVersions[0]!.name).toBe('v1');
    expect(p.epoch.epochLength).toBe(17_280n);
    expect(p.validation).toEqual({ timestampExpiration: 60n, timestampAdvance: 30n });
    expect(p.fee!.groups[0]).toEqual({
      name: 'cosmos',
      minGasPrice: 10n,
      typeUrls: ['/cosmos.bank.v1beta1.MsgSend'],
    });
    expect(p.allowedTransferAddresses).toHaveLength(1);
    expect(p.developerAccess.untilBlockHeight).toBe(2_500_000n);
    expect(p.raw.bandwidth_limits_params).toBeDefined();
  });

  it('treats missing default-valued fields as proto3 zero values, and absent fee_params as null', () => {
    const p = parseInferenceParams({ params: { devshard_escrow_params: { min_amount: '1' } } });
    expect(p.devshardEscrow.minAmount).toBe(1n);
    expect(p.devshardEscrow.maxAmount).toBe(0n);
    expect(p.devshardEscrow.devshardRequestsEnabled).toBe(false);
    expect(p.devshardEscrow.allowedCreatorAddresses).toEqual([]);
    expect(p.fee).toBeNull();
    expect(p.allowedTransferAddresses).toEqual([]);
    expect(p.epoch.epochLength).toBe(0n);
  });

  it('rejects a wrong type, naming the field', () => {
    const bad = structuredClone(REALISTIC_PARAMS);
    (bad.params.devshard_escrow_params as Record<string, unknown>).min_amount = '5 GNK';
    expect(() => parseInferenceParams(bad)).toThrow(/params\.devshard_escrow_params\.min_amount/);
    expect(() => parseInferenceParams({})).toThrow(/params/);
  });
});

describe('queryInferenceParams over HTTP', () => {
  let server: TestHttpServer;
  let reply: { status: number; body: unknown } = { status: 200, body: REALISTIC_PARAMS };
  beforeAll(async () => {
    server = await startTestHttpServer((_req, res) => sendJson(res, reply.status, reply.body));
  });
  afterAll(() => server.close());

  it('GETs the params path under the configured base (prefix kept)', async () => {
    reply = { status: 200, body: REALISTIC_PARAMS };
    const client = createChainClient({ chainRest: `${server.url}/chain-api/` });
    const p = await queryInferenceParams(client);
    expect(p.devshardEscrow.maxAmount).toBe(10_000_000_000n);
    expect(server.requests.at(-1)!.path).toBe(`/chain-api${INFERENCE_PARAMS_PATH}`);
  });

  it('turns a malformed body into CHAIN_ERR_BAD_RESPONSE naming the endpoint path, not the URL', async () => {
    reply = { status: 200, body: { params: { devshard_escrow_params: { min_amount: [] } } } };
    const client = createChainClient({ chainRest: `${server.url}/s3cretk3y` });
    const err = await queryInferenceParams(client).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainError);
    expect((err as ChainError).code).toBe('CHAIN_ERR_BAD_RESPONSE');
    expect((err as ChainError).message).toContain(`GET ${INFERENCE_PARAMS_PATH} (chain REST)`);
    expect((err as ChainError).message).toContain('min_amount');
    expect((err as ChainError).message).not.toMatch(/s3cretk3y|127\.0\.0\.1/);
  });

  it('reports an error status with the node message', async () => {
    reply = { status: 500, body: { code: 13, message: 'internal: store unavailable', details: [] } };
    const err = (await queryInferenceParams(createChainClient({ chainRest: server.url })).catch(
      (e: unknown) => e,
    )) as ChainError;
    expect(err.code).toBe('CHAIN_ERR_HTTP_STATUS');
    expect(err.status).toBe(500);
    expect(err.message).toContain('store unavailable');
  });

  it('reports a non-JSON 200 as a malformed response', async () => {
    reply = { status: 200, body: '<html>proxy</html>' };
    const err = (await queryInferenceParams(createChainClient({ chainRest: server.url })).catch(
      (e: unknown) => e,
    )) as ChainError;
    expect(err.code).toBe('CHAIN_ERR_BAD_RESPONSE');
  });
});
