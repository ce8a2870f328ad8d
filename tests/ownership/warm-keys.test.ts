// A host signing with its warm key (an authz grantee of its cold address for MsgStartInference,
// chain-and-network.md §2.6 Settle 5, devshard-protocol.md §5.7) against the gateway's owned sessions:
// the warm keys are read from the chain's authz grants before the session opens (WarmKeyDirectory),
// that host's receipts and Finish are accepted, and its state signatures count towards the
// settlement quorum, so the escrow finalizes and settles on the devnet chain.
import { findEscrowSettledEvents } from '@gonka-gateway/chain';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { recoverStateSigner, settlementMessage } from '@gonka-gateway/devshard';
import { devshardBaseUrl, HttpHostTransport } from '@gonka-gateway/devshard/session';
import { type ActiveEscrow, OwnedSessions, WarmKeyDirectory } from '@gonka-gateway/escrow-runtime';
import { redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { broadcastIncluded } from '../devshard-devnet/chain-tx.js';
import { devnetClock, Gateway, participantOf } from '../devshard-devnet/harness.js';

let gateway: Gateway;
let t: TestRedis;

beforeAll(async () => {
  [gateway, t] = await Promise.all([
    Gateway.start({ devshardHosts: { warmKeySigners: ['host-1'] } }),
    createTestRedis(),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.allSettled([t?.cleanup(), gateway?.close()]);
});

const body = (tag: string) =>
  new TextEncoder().encode(
    JSON.stringify({
      model: QWEN_MODEL,
      messages: [{ role: 'user', content: tag }],
      max_tokens: 64,
      stream: true,
    }),
  );

describe('warm-key signatures of a host', () => {
  it('are accepted by an owned session, and the escrow finalizes and settles', async () => {
    const host1 = gateway.devnet.participants.find((p) => p.name === 'host-1')!;
    const escrow = await gateway.escrow((group) => group.has(host1.address), 'host-1 in the group');
    const warmKeys = new WarmKeyDirectory({ client: gateway.client });
    const clock = devnetClock(gateway.devnet);
    const owned = new OwnedSessions({
      redis: t.redis,
      keys: redisKeys(t.prefix),
      replicaId: 'warm',
      leaseTtlMs: 1_500,
      store: escrow.store,
      signerFor: () => gateway.creator.key,
      resolveHost: (address, version) => {
        const url = gateway.hostUrls.get(address);
        return url === undefined ? undefined : { address, baseUrl: devshardBaseUrl(url, version) };
      },
      prepare: (e) => warmKeys.prepareFor(e.escrowId),
      opened: (id, participants) => warmKeys.track(id, participants),
      released: (id) => warmKeys.forget(id),
      transportFor: (key) => new HttpHostTransport({ signer: key, nowSeconds: clock.nowSeconds }),
      session: { maxNonce: gateway.params.devshardEscrow.maxNonce, clock, isWarmKey: warmKeys.isWarmKey },
    });
    const active: ActiveEscrow = {
      escrowId: escrow.id,
      modelId: QWEN_MODEL,
      version: gateway.version,
      signerKeyEnv: null,
      hasEncryptedKey: false,
      signerKeyEncrypted: null,
    };
    try {
      expect(await owned.claim(active)).toBe(true);
      // Read from the chain's authz grants (GET /cosmos/authz/v1beta1/grants/granter/{granter}).
      expect(warmKeys.warmKeysOf(host1.address)).toEqual([
        participantOf(gateway.devnet, host1.address).warmKey.address,
      ]);
      // Requests until host-1 has executed one (slot nonce mod N, devshard-protocol.md §1).
      let served = false;
      for (let i = 0; i <= escrow.slots.length && !served; i++) {
        const executor = owned.list()[0]!.nextExecutor;
        const b = body(`warm ${i}`);
        const result = await owned.infer(escrow.id, {
          body: b,
          model: QWEN_MODEL,
          inputLength: BigInt(b.length),
          maxTokens: 64n,
        });
        expect(result).toMatchObject({ status: 'completed', finished: true });
        served = executor === host1.address;
      }
      expect(served).toBe(true);
    } finally {
      await owned.close();
    }

    // Finalize as the controller does (finalize.ts): the same lookup, on the session's store.
    const session = await escrow.open({ isWarmKey: warmKeys.isWarmKey });
    try {
      const fin = await session.finalize();
      // host-1's slots are bound to its warm key: its warm-key signatures were accepted (§5.7).
      expect([...session.state.warmKeys.values()]).toContain(host1.warmKey.address);
      expect(session.fault).toBeUndefined();
      // Its state signatures are among the quorum, signed with the warm key (chain-and-network.md §2.6 Settle 5).
      const signers = fin.signatures.map(({ slotId, signature }) => ({
        cold: escrow.slots[slotId],
        signer: recoverStateSigner(fin.payload.stateRoot, escrow.id.toString(), fin.payload.nonce, signature),
      }));
      expect(signers).toContainEqual({ cold: host1.address, signer: host1.warmKey.address });
      const { settler: _settler, ...message } = settlementMessage(
        fin.payload,
        fin.signatures,
        gateway.creator.address,
      );
      const outcome = await broadcastIncluded(
        gateway.client,
        gateway.signer.prepareSettleEscrow(message, gateway.params.fee),
      );
      expect(findEscrowSettledEvents(outcome.events)).toHaveLength(1);
      expect(gateway.devnet.chain.escrow(escrow.id)!.settled).toBe(true);
    } finally {
      await session.close();
      warmKeys.close();
    }
  }, 20_000);
});
