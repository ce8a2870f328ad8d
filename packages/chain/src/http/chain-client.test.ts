import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainError, isChainError } from '../errors.js';
import { queryLatestEpoch } from '../query/epochs.js';
import { queryChainId } from '../query/node-info.js';
import { startTestHttpServer, type TestHttpServer } from '../testing/test-http-server.js';
import { createChainClient } from './chain-client.js';

describe('createChainClient', () => {
  it('trims trailing slashes and defaults the tx-query base to chain REST', () => {
    const c = createChainClient({
      chainRest: 'http://node:8000/chain-api//',
      publicApi: 'https://node:8000',
    });
    expect(c.chainRest).toBe('http://node:8000/chain-api');
    expect(c.txQueryRest).toBe('http://node:8000/chain-api');
    expect(c.chainRpc).toBeUndefined();
  });

  it('rejects non-http URLs without echoing them', () => {
    for (const bad of ['ftp://x', 'not a url', 'http://h/?apikey=SECRET', 'http://u:SECRET@h']) {
      let err: unknown;
      try {
        createChainClient({ chainRest: bad });
      } catch (e) {
        err = e;
      }
      expect(isChainError(err, 'CHAIN_ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).not.toContain('SECRET');
    }
  });

  it('names the missing base when a query needs it', async () => {
    const err = await queryLatestEpoch(createChainClient({ chainRest: 'http://x' })).catch((e: unknown) => e);
    expect(isChainError(err, 'CHAIN_ERR_NOT_CONFIGURED')).toBe(true);
    expect((err as Error).message).toContain('public API');
  });
});

describe('transport failures', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    // Never answers: for the timeout case.
    server = await startTestHttpServer(() => new Promise(() => {}));
  });
  afterAll(() => server.close());

  it('maps a timeout to CHAIN_ERR_TIMEOUT naming the endpoint', async () => {
    const err = (await queryChainId(createChainClient({ chainRest: server.url, timeoutMs: 200 })).catch(
      (e: unknown) => e,
    )) as ChainError;
    expect(err.code).toBe('CHAIN_ERR_TIMEOUT');
    expect(err.message).toContain('GET /cosmos/base/tendermint/v1beta1/node_info (chain REST)');
  });

  it('maps a refused connection to CHAIN_ERR_UNREACHABLE', async () => {
    const err = (await queryChainId(createChainClient({ chainRest: 'http://127.0.0.1:9' })).catch(
      (e: unknown) => e,
    )) as ChainError;
    expect(err.code).toBe('CHAIN_ERR_UNREACHABLE');
  });
});
