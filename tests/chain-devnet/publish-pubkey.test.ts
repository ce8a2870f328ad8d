// Publishing a pubkey (chain-and-network.md §5): `gwctl publish-pubkey` on an account that has never
// signed makes its key visible in the auth account and in the node's /v2/accounts/:address, after
// which the node accepts its signed direct requests.
import {
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  isChainError,
  PrivateKey,
  queryAccount,
  queryInferenceParams,
  queryNodeAccount,
} from '@gonka-gateway/chain';
import { type Devnet, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  account,
  clientFor,
  cliWait,
  errorLine,
  gwctl,
  scratchDir,
  startChainDevnet,
  UNTIL_INCLUDED,
} from './harness.js';

let devnet: Devnet;
let client: ChainClient;
let scratch: Awaited<ReturnType<typeof scratchDir>>;
let bodyFile: string;

beforeAll(async () => {
  devnet = await startChainDevnet();
  client = clientFor(devnet);
  scratch = await scratchDir();
  bodyFile = await scratch.file(
    'body.json',
    JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 16 }),
  );
});

afterAll(async () => {
  await devnet?.close();
  await scratch?.cleanup();
});

/** The node's answer for an account that never signed (400 "pubkey unavailable") as a typed error. */
async function expectNodeHasNoPubkey(address: string) {
  const err = await queryNodeAccount(client, address).then(
    () => null,
    (e: unknown) => e,
  );
  expect(isChainError(err, 'CHAIN_ERR_PUBKEY_UNAVAILABLE')).toBe(true);
  expect(err).toMatchObject({ status: 400 });
  expect(err).toMatchObject({ hint: expect.stringContaining('gwctl publish-pubkey') });
}

describe('gwctl publish-pubkey on creator-fresh', () => {
  const fresh = () => account(devnet, 'creator-fresh');
  const sendRequest = () =>
    gwctl(devnet, ['send-request', '--body-file', bodyFile], { key: fresh().key, random: () => 0 });

  it('before: no pubkey in the auth account or on the node, and direct requests are refused', async () => {
    const auth = await queryAccount(client, fresh().address);
    expect(auth).toMatchObject({ address: fresh().address, pubKey: null });
    await expectNodeHasNoPubkey(fresh().address);

    const run = await sendRequest();
    expect(run.code).toBe(1);
    expect(errorLine(run)).toContain('direct request rejected (HTTP 401): pubkey unavailable');
    expect(errorLine(run)).toContain('(hint: publish the public key first (gwctl publish-pubkey))');
  });

  it('publishes with a 1 ngonka self-send: hash first, then the height; only the fee is spent', async () => {
    const before = devnet.chain.balanceOf(fresh().address);
    const run = await gwctl(devnet, ['publish-pubkey', ...cliWait(UNTIL_INCLUDED)], { key: fresh().key });
    expect(run.code, run.stderr).toBe(0);
    const m = /^tx_hash: ([0-9A-F]{64})\npublished at height (\d+)\n$/.exec(run.stdout);
    expect(m, run.stdout).not.toBeNull();
    const indexed = devnet.chain.tx(m![1]!)!;
    expect(indexed.height).toBe(BigInt(m![2]!));
    expect(indexed.result.code).toBe(0);
    // 700000 gas × 10 ngonka/gas (MsgSend is in the `cosmos` group); the 1 ngonka comes back.
    expect(before - devnet.chain.balanceOf(fresh().address)).toBe(7_000_000n);
  });

  it('after: the key is in the auth account, on the node (/v2/accounts) and in the devnet state', async () => {
    const key = fresh().key;
    const auth = await queryAccount(client, fresh().address);
    expect(auth?.pubKey).toEqual(key.publicKey);
    expect(auth?.pubKeyType).toBe('/cosmos.crypto.secp256k1.PubKey');

    const node = await queryNodeAccount(client, fresh().address);
    expect(node).not.toBeNull();
    expect(node!.pubKey).toEqual(key.publicKey);
    expect(node!.denom).toBe('ngonka');
    expect(node!.balance).toBe(devnet.chain.spendableOf(fresh().address));

    expect(devnet.chain.account(fresh().address)!.pubKey).toEqual(key.publicKey);
  });

  it('a signed direct request from the account now gets a completion', async () => {
    const run = await sendRequest();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().length).toBeGreaterThan(0);
  });

  it('a second run sends nothing (already published), in text and JSON', async () => {
    const before = devnet.chain.balanceOf(fresh().address);
    const text = await gwctl(devnet, ['publish-pubkey'], { key: fresh().key });
    expect(text).toMatchObject({
      code: 0,
      stdout: `public key of ${fresh().address} is already published\n`,
    });
    const json = await gwctl(devnet, ['publish-pubkey', '--json'], { key: fresh().key });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ address: fresh().address, published: true, sent: false });
    devnet.blocks.step();
    expect(devnet.chain.balanceOf(fresh().address)).toBe(before);
  });
});

describe('publishing with the library', () => {
  it('preparePublishPubkey on outsider-fresh (not an escrow creator) is included and publishes the key', async () => {
    const key = account(devnet, 'outsider-fresh').key;
    await expectNodeHasNoPubkey(key.address);
    const params = await queryInferenceParams(client);
    const signer = await connectTxSigner(client, key);
    const tx = signer.preparePublishPubkey(params.fee);
    const outcome = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
    expect(outcome.status).toBe('included');
    expect((await queryNodeAccount(client, key.address))!.pubKey).toEqual(key.publicKey);
    expect((await queryAccount(client, key.address))!.pubKey).toEqual(key.publicKey);
  });
});

describe('publish-pubkey errors', () => {
  it('an account that does not exist on chain: exit 1, "fund it first"; the node says account not found', async () => {
    const stranger = PrivateKey.random();
    const run = await gwctl(devnet, ['publish-pubkey'], { key: stranger });
    expect(run.code).toBe(1);
    expect(errorLine(run)).toBe(`gwctl: account ${stranger.address} does not exist on chain: fund it first`);
    expect(await queryNodeAccount(client, stranger.address)).toBeNull();
    expect(await queryAccount(client, stranger.address)).toBeNull();
  });

  it('an account that cannot pay the fee: exit 1, nothing sent', async () => {
    const poor = PrivateKey.random();
    devnet.chain.fund(poor.address, 1_000n);
    const run = await gwctl(devnet, ['publish-pubkey'], { key: poor });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(errorLine(run)).toBe(
      'gwctl: balance 1000 ngonka (0.000001 GNK) does not cover fee + 1 ngonka (7000001 ngonka (0.007000001 GNK))',
    );
    expect(devnet.chain.balanceOf(poor.address)).toBe(1_000n);
  });
});
