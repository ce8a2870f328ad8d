// A chain whose approved_versions hold only a future runtime (`v6`): creating an escrow through the
// controller answers 409 `unsupported_protocol_version` naming both lists before anything is signed
// or sent, and registering an escrow made elsewhere answers the same, storing nothing.
import {
  broadcastAndWait,
  connectTxSigner,
  findEscrowCreatedEvents,
  queryInferenceParams,
} from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminInject,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';

const NAMED = /the chain approves v6; this gateway speaks v5, v4, v3/;

describe('a chain that approves no protocol version this gateway speaks', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness({
      params: (p) => {
        p.devshardEscrow.approvedVersions = [{ name: 'v6', binary: '', sha256: '' }];
      },
    });
    app = await h.build();
  });
  afterAll(async () => {
    await h?.close();
  });

  const count = async (table: 'chain_tx_commitments' | 'escrows' | 'session_heads') =>
    Number((await h.sql`select count(*)::int as n from ${h.sql(table)}`)[0]!.n);

  it('POST /v1/admin/escrows answers 409 unsupported_protocol_version and signs and sends nothing', async () => {
    const creator = h.account('creator-0').address;
    const balance = h.devnet.chain.balanceOf(creator);
    const lastId = h.devnet.chain.lastEscrowId();
    const res = await adminInject(app, 'POST', '/v1/admin/escrows', {
      amount: (5n * GNK).toString(),
      model_id: QWEN_MODEL,
      chain_id: h.chainId,
      private_key_env: 'CREATOR_KEY',
      register: true,
    });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({
      error: {
        message: expect.stringMatching(NAMED),
        type: 'invalid_request_error',
        param: null,
        code: 'unsupported_protocol_version',
      },
    });
    expect(await count('chain_tx_commitments')).toBe(0);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    expect(h.devnet.chain.balanceOf(creator)).toBe(balance);
  });

  it('POST /v1/admin/devshards answers the same for an escrow created elsewhere, and stores nothing', async () => {
    const creator = h.account('creator-0');
    const signer = await connectTxSigner(h.chain, creator.key, {
      nowNs: () => h.devnet.core.blocks.clockNs(),
    });
    const tx = signer.prepareCreateEscrow(
      { amount: 5n * GNK, modelId: QWEN_MODEL },
      (await queryInferenceParams(h.chain)).fee,
    );
    const outcome = await broadcastAndWait(h.chain, tx, { intervalMs: 20, timeoutMs: 15_000 });
    if (outcome.status !== 'included') throw new Error(`create not included: ${JSON.stringify(outcome)}`);
    const escrowId = findEscrowCreatedEvents(outcome.events)[0]!.escrowId;
    const res = await adminInject(app, 'POST', '/v1/admin/devshards', {
      escrow_id: escrowId.toString(),
      private_key_env: 'CREATOR_KEY',
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({
      code: 'unsupported_protocol_version',
      message: expect.stringMatching(NAMED),
    });
    expect(await count('escrows')).toBe(0);
    expect(await count('session_heads')).toBe(0);
  });
});
