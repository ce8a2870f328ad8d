// Read-only queries against a real node, only when GONKA_LIVE_NODE is set (style.md: live-chain tests
// behind an env flag), e.g. GONKA_LIVE_NODE=http://node2.gonka.ai:8000. Nothing is signed or sent.
import { describe, expect, it } from 'vitest';
import { createChainClient } from './http/chain-client.js';
import { epochSwitchHeight } from './query/epoch-schedule.js';
import { queryLatestEpoch } from './query/epochs.js';
import { queryGovernanceModels } from './query/governance-models.js';
import { queryChainId } from './query/node-info.js';
import { queryInferenceParams } from './query/params.js';
import { queryParticipants } from './query/participants.js';
import { queryRpcStatus } from './query/rpc-status.js';

const node = process.env.GONKA_LIVE_NODE;

describe.skipIf(!node)('live node (GONKA_LIVE_NODE)', () => {
  it('reads chain id, height, params, epoch, participants and models', async () => {
    const client = createChainClient({
      chainRest: `${node}/chain-api`,
      chainRpc: `${node}/chain-rpc`,
      publicApi: node,
      timeoutMs: 20_000,
    });
    const [chainId, status, params, epoch, participants, models] = await Promise.all([
      queryChainId(client),
      queryRpcStatus(client),
      queryInferenceParams(client),
      queryLatestEpoch(client),
      queryParticipants(client),
      queryGovernanceModels(client),
    ]);
    expect(chainId).not.toBe('');
    expect(status.latestBlockHeight).toBeGreaterThan(0n);
    expect(params.devshardEscrow.groupSize).toBeGreaterThan(0);
    expect(epochSwitchHeight(epoch)).toBeGreaterThan(0n);
    expect(participants.participants.length).toBeGreaterThan(0);
    expect(models.length).toBeGreaterThan(0);
  });
});
