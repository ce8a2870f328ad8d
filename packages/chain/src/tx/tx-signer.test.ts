import { AuthInfo, TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import { sha256 } from '../crypto/secp256k1.js';
import { isChainError } from '../errors.js';
import { createChainClient } from '../http/chain-client.js';
import { sendJson, startTestHttpServer, type TestHttpServer } from '../testing/test-http-server.js';
import { txHash } from './tx-hash.js';
import { connectTxSigner, TxSigner, UNORDERED_TX_TTL_NS } from './tx-signer.js';

const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const NOW = 1_760_000_000_000_000_000n;

describe('TxSigner', () => {
  it('timeout timestamps are max(now + 9 min, last + 1 ns): strictly increasing under a frozen or backward clock', () => {
    let now = NOW;
    const signer = new TxSigner({ key, chainId: 'c', accountNumber: 0n, nowNs: () => now });
    const a = signer.nextTimeoutTimestampNs();
    const b = signer.nextTimeoutTimestampNs();
    now -= 5_000_000_000n;
    const c = signer.nextTimeoutTimestampNs();
    now = NOW + 60_000_000_000n;
    const d = signer.nextTimeoutTimestampNs();
    expect(a).toBe(NOW + UNORDERED_TX_TTL_NS);
    expect([b - a, c - b]).toEqual([1n, 1n]);
    expect(d).toBe(now + UNORDERED_TX_TTL_NS);
  });

  it('two signers are independent objects (no module-level counter)', () => {
    const s1 = new TxSigner({ key, chainId: 'c', accountNumber: 0n, nowNs: () => NOW });
    const s2 = new TxSigner({ key, chainId: 'c', accountNumber: 0n, nowNs: () => NOW });
    s1.nextTimeoutTimestampNs();
    expect(s2.nextTimeoutTimestampNs()).toBe(NOW + UNORDERED_TX_TTL_NS);
  });

  it('prepared tx: hash is SHA-256 of the broadcast bytes, fee and gas land in AuthInfo, distinct timeouts', () => {
    const signer = new TxSigner({ key, chainId: 'gonka-devnet', accountNumber: 4n, nowNs: () => NOW });
    const t1 = signer.prepareCreateEscrow({ amount: 5_000_000_000n, modelId: 'm' }, null);
    const t2 = signer.prepareCreateEscrow({ amount: 5_000_000_000n, modelId: 'm' }, null);
    expect(t1.txHash).toBe(Buffer.from(sha256(t1.txBytes)).toString('hex').toUpperCase());
    expect(t1.txHash).toBe(txHash(t1.txBytes));
    expect(t1.txHash).not.toBe(t2.txHash);
    expect(t2.timeoutTimestampNs - t1.timeoutTimestampNs).toBe(1n);
    const auth = AuthInfo.decode(TxRaw.decode(t1.txBytes).authInfoBytes);
    expect(auth.fee!.gasLimit).toBe(700_000n);
    expect(auth.fee!.amount).toEqual([{ denom: 'ngonka', amount: '7000000' }]);
    expect(t1.fee).toEqual({ amount: 7_000_000n, gasLimit: 700_000n });
    expect(t1.signer).toBe(key.address);
  });

  it('settles as itself and publishes its key with a self-send', () => {
    const signer = new TxSigner({
      key,
      chainId: 'c',
      accountNumber: 0n,
      gasLimit: 200_000n,
      gasPriceFloor: 1n,
    });
    const pub = signer.preparePublishPubkey(null);
    expect(pub.typeUrls).toEqual(['/cosmos.bank.v1beta1.MsgSend']);
    expect(pub.fee).toEqual({ amount: 200_000n, gasLimit: 200_000n });
    expect(() => signer.prepare([], null)).toThrow(/needs a message/);
  });
});

describe('connectTxSigner', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startTestHttpServer((req, res) => {
      if (req.path.endsWith('/node_info'))
        return sendJson(res, 200, { default_node_info: { network: 'gonka-devnet' } });
      if (req.path.endsWith(key.address)) {
        return sendJson(res, 200, { account: { address: key.address, account_number: '11', sequence: '0' } });
      }
      return sendJson(res, 404, { message: 'account not found' });
    });
  });
  afterAll(() => server.close());

  it('reads chain id and account number live', async () => {
    const signer = await connectTxSigner(createChainClient({ chainRest: server.url }), key);
    expect([signer.chainId, signer.accountNumber]).toEqual(['gonka-devnet', 11n]);
    const configured = await connectTxSigner(createChainClient({ chainRest: server.url }), key, {
      chainId: 'x',
    });
    expect(configured.chainId).toBe('x');
  });

  it('refuses an account the chain does not know', async () => {
    const other = PrivateKey.fromHex('01'.repeat(32));
    const err = await connectTxSigner(createChainClient({ chainRest: server.url }), other).catch(
      (e: unknown) => e,
    );
    expect(isChainError(err, 'CHAIN_ERR_NOT_FOUND')).toBe(true);
  });
});
