import {
  encodeMsgCreateDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
  PrivateKey,
  SECP256K1_ORDER,
} from '@gonka-gateway/chain';
import { SignMode } from 'cosmjs-types/cosmos/tx/signing/v1beta1/signing';
import { TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { QWEN_MODEL } from '../genesis.js';
import {
  account,
  broadcast,
  CREATE_FEE,
  getTx,
  NINE_MINUTES_NS,
  signCustom,
  snapshot,
  startTestDevnet,
  TxFactory,
  withSignature,
} from '../testing/test-devnet.js';

// chain-and-network.md §2.2–2.4: each ante rule, accepted and rejected; a rejection changes nothing.
describe('ante handler', () => {
  let devnet: Devnet;
  let txs: TxFactory;
  const createMsg = (key: PrivateKey) => [
    {
      typeUrl: MSG_CREATE_DEVSHARD_ESCROW,
      value: encodeMsgCreateDevshardEscrow({
        creator: key.address,
        amount: 5_000_000_000n,
        modelId: QWEN_MODEL,
      }),
    },
  ];

  beforeAll(async () => {
    devnet = await startTestDevnet();
    txs = new TxFactory(devnet);
  });
  afterAll(() => devnet.close());

  /** Broadcasts, expects the given code, and checks that no balance or escrow changed, even after a block. */
  async function expectRejected(
    tx: Uint8Array,
    code: number,
    log: RegExp,
    codespace = 'sdk',
    alreadyIndexed = false,
  ) {
    const before = snapshot(devnet);
    const escrows = devnet.chain.lastEscrowId();
    const { status, txResponse } = await broadcast(devnet, tx);
    expect(status).toBe(200);
    expect({ code: txResponse.code, codespace: txResponse.codespace }).toEqual({ code, codespace });
    expect(txResponse.raw_log).toMatch(log);
    devnet.blocks.step();
    expect(snapshot(devnet)).toEqual(before);
    expect(devnet.chain.lastEscrowId()).toBe(escrows);
    if (!alreadyIndexed) expect((await getTx(devnet, txResponse.txhash)).status).toBe(404);
  }

  it('accepts a valid unordered tx, executes it in the next block and charges the fee', async () => {
    const creator = account(devnet, 'creator-0');
    const before = devnet.chain.balanceOf(creator.address);
    const tx = txs.createEscrow(creator.key);
    const { txResponse } = await broadcast(devnet, tx);
    expect(txResponse).toMatchObject({ code: 0, txhash: tx.txHash, height: '0' });
    expect((await getTx(devnet, tx.txHash)).status).toBe(404); // not indexed before the block
    expect(devnet.chain.balanceOf(creator.address)).toBe(before); // CheckTx changed nothing
    const height = devnet.blocks.step();
    const indexed = await getTx(devnet, tx.txHash);
    expect(indexed.txResponse).toMatchObject({ code: 0, height: height.toString() });
    expect(devnet.chain.balanceOf(creator.address)).toBe(before - CREATE_FEE - 5_000_000_000n);
  });

  it('rejects a tampered signature (code 4)', async () => {
    const tx = txs.createEscrow(account(devnet, 'creator-1').key);
    const sig = TxRaw.decode(tx.txBytes).signatures[0]!;
    const bad = Uint8Array.from(sig);
    bad[10] = bad[10]! ^ 1;
    await expectRejected(withSignature(tx.txBytes, bad), 4, /signature verification failed/);
  });

  it('rejects a high-S twin of a valid signature (code 4)', async () => {
    const tx = txs.createEscrow(account(devnet, 'creator-1').key);
    const sig = TxRaw.decode(tx.txBytes).signatures[0]!;
    const s = BigInt(`0x${Buffer.from(sig.subarray(32)).toString('hex')}`);
    const highS = Buffer.from((SECP256K1_ORDER - s).toString(16).padStart(64, '0'), 'hex');
    await expectRejected(
      withSignature(tx.txBytes, Uint8Array.from([...sig.subarray(0, 32), ...highS])),
      4,
      /signature verification failed/,
    );
  });

  it('rejects a tx signed for another chain id (code 4)', async () => {
    const tx = txs.createEscrow(account(devnet, 'creator-1').key, undefined, undefined, {
      chainId: 'gonka-mainnet',
    });
    await expectRejected(tx.txBytes, 4, /chain-id \(gonka-devnet\)/);
  });

  it('rejects a tx signed with another account number (code 4)', async () => {
    const key = account(devnet, 'creator-1').key;
    const real = devnet.chain.account(key.address)!.accountNumber;
    const tx = txs.createEscrow(key, undefined, undefined, { accountNumber: real + 1n });
    await expectRejected(tx.txBytes, 4, new RegExp(`account number \\(${real}\\)`));
  });

  it('rejects a replay of the same bytes while pending and after commit (code 19)', async () => {
    const tx = txs.send(account(devnet, 'creator-1').key, account(devnet, 'outsider').address, 1n);
    expect((await broadcast(devnet, tx)).txResponse.code).toBe(0);
    expect((await broadcast(devnet, tx)).txResponse).toMatchObject({ code: 19, codespace: 'sdk' });
    devnet.blocks.step();
    await expectRejected(tx.txBytes, 19, /tx already in mempool/, 'sdk', true);
    expect((await getTx(devnet, tx.txHash)).txResponse?.code).toBe(0); // the original stays indexed
  });

  it('rejects a second tx with the same signer and timeout_timestamp (code 18)', async () => {
    const key = account(devnet, 'creator-1').key;
    const timeoutNs = txs.nextTimeoutNs();
    expect((await broadcast(devnet, txs.send(key, key.address, 1n, { timeoutNs }))).txResponse.code).toBe(0);
    devnet.blocks.step();
    await expectRejected(txs.send(key, key.address, 2n, { timeoutNs }).txBytes, 18, /tx is duplicated/);
  });

  it('rejects a fee below gas_limit × price (code 13)', async () => {
    const tx = txs.createEscrow(account(devnet, 'creator-1').key, undefined, undefined, {
      fee: CREATE_FEE - 1n,
    });
    await expectRejected(tx.txBytes, 13, /insufficient fees; got: 1999999ngonka required: 2000000ngonka/);
  });

  it('rejects a fee the account cannot pay (code 5)', async () => {
    const poor = PrivateKey.random();
    devnet.chain.fund(poor.address, CREATE_FEE - 1n);
    await expectRejected(
      txs.send(poor, poor.address, 1n).txBytes,
      5,
      /failed to deduct fees.*insufficient funds/,
    );
  });

  it('rejects a signer without an account (code 9)', async () => {
    const stranger = PrivateKey.random();
    await expectRejected(
      signCustom(devnet, stranger, { messages: createMsg(stranger), accountNumber: 0n }),
      9,
      /does not exist/,
    );
  });

  it('rejects a signer_infos key that is not the message signer (code 8)', async () => {
    const key = account(devnet, 'creator-1').key;
    const tx = signCustom(devnet, key, {
      messages: createMsg(key),
      pubKey: account(devnet, 'creator-2').key.publicKey,
    });
    await expectRejected(tx, 8, /pubKey does not match signer address/);
  });

  it('enforces the unordered rules: timeout required, ≤ 10 min ahead, not passed, sequence 0', async () => {
    const key = account(devnet, 'creator-1').key;
    const msgs = createMsg(key);
    await expectRejected(
      signCustom(devnet, key, { messages: msgs, timeoutNs: null }),
      18,
      /must have timeout_timestamp set/,
    );
    await expectRejected(
      signCustom(devnet, key, {
        messages: msgs,
        timeoutNs: devnet.blocks.timeNs + 11n * 60n * 1_000_000_000n,
      }),
      18,
      /ttl exceeds 10m0s/,
    );
    await expectRejected(
      signCustom(devnet, key, { messages: msgs, timeoutNs: devnet.blocks.timeNs - 1n }),
      42,
      /timeout timestamp/,
    );
    await expectRejected(signCustom(devnet, key, { messages: msgs, sequence: 1n }), 32, /sequence 0/);
  });

  it('accepts ordered txs with the account sequence and increments it', async () => {
    const key = account(devnet, 'creator-2').key;
    const seq = devnet.chain.account(key.address)!.sequence;
    const msgs = createMsg(key);
    await expectRejected(
      signCustom(devnet, key, { messages: msgs, unordered: false, timeoutNs: null, sequence: seq + 1n }),
      32,
      /sequence mismatch/,
    );
    const ok = signCustom(devnet, key, { messages: msgs, unordered: false, timeoutNs: null, sequence: seq });
    expect((await broadcast(devnet, ok)).txResponse.code).toBe(0);
    devnet.blocks.step();
    expect(devnet.chain.account(key.address)!.sequence).toBe(seq + 1n);
  });

  it('rejects a sign mode other than DIRECT, a gas limit below the tx size, and garbage bytes', async () => {
    const key = account(devnet, 'creator-1').key;
    const msgs = createMsg(key);
    await expectRejected(
      signCustom(devnet, key, { messages: msgs, signMode: SignMode.SIGN_MODE_LEGACY_AMINO_JSON }),
      4,
      /sign mode/,
    );
    await expectRejected(
      signCustom(devnet, key, { messages: msgs, gasLimit: 1_000n, fee: 10_000n }),
      11,
      /out of gas/,
    );
    await expectRejected(Uint8Array.from([1, 2, 3, 4]), 2, /tx parse error/);
    await expectRejected(
      signCustom(devnet, key, { messages: [{ typeUrl: '/cosmos.gov.v1.MsgVote', value: new Uint8Array() }] }),
      2,
      /unable to resolve type URL/,
    );
  });

  it('keeps a tx that fails at DeliverTx indexed with its code, charging only the fee', async () => {
    const key = account(devnet, 'creator-1').key;
    // Two creates that each pass CheckTx alone; the cap fault set between them fails the second at delivery.
    const first = txs.createEscrow(key);
    expect((await broadcast(devnet, first)).txResponse.code).toBe(0);
    devnet.faults.set({ epochCapReached: true });
    const before = devnet.chain.balanceOf(key.address);
    devnet.blocks.step();
    devnet.faults.clear();
    const indexed = await getTx(devnet, first.txHash);
    expect(indexed.txResponse).toMatchObject({ code: 1172, codespace: 'inference' });
    expect(indexed.txResponse!.raw_log).toMatch(/^failed to execute message; message index: 0: /);
    expect(devnet.chain.balanceOf(key.address)).toBe(before - CREATE_FEE);
  });

  it('answers 400 for a malformed broadcast body or mode', async () => {
    const post = (body: unknown) =>
      fetch(`${devnet.urls.chainRest}/cosmos/tx/v1beta1/txs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post({ tx_bytes: 'AAAA', mode: 'BROADCAST_MODE_BLOCK' })).status).toBe(400);
    expect((await post({ tx_bytes: '!!', mode: 'BROADCAST_MODE_SYNC' })).status).toBe(400);
    expect((await post({ mode: 'BROADCAST_MODE_SYNC' })).status).toBe(400);
  });

  it('uses NINE_MINUTES_NS timeouts that the 10-minute rule accepts', () => {
    expect(NINE_MINUTES_NS < 10n * 60n * 1_000_000_000n).toBe(true);
  });
});
