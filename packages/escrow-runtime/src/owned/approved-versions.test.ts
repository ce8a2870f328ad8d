// ApprovedVersions against a devnet whose approved_versions hold only `v6` (genesis params): the
// refusal names both lists, the lists follow a governance change, the last answer outlives a node
// outage, and nothing is refused before the chain answered once.
import { createChainClient } from '@gonka-gateway/chain';
import { type Devnet, devnetChainClient, startDevnet } from '@gonka-gateway/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovedVersions } from './approved-versions.js';

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({
    ports: 'ephemeral',
    blockIntervalMs: 0,
    env: {},
    devshardHosts: false,
    params: (p) => {
      p.devshardEscrow.approvedVersions = [{ name: 'v6', binary: '', sha256: '' }];
    },
  });
});
afterAll(() => devnet?.close());

const approve = (...names: string[]) =>
  devnet.chain.updateParams((p) => {
    p.devshardEscrow.approvedVersions = names.map((name) => ({ name, binary: '', sha256: '' }));
  });

describe('ApprovedVersions', () => {
  it('refuses a version the chain does not approve, naming both lists, and follows governance', async () => {
    const versions = new ApprovedVersions({ client: devnetChainClient(devnet), maxAgeMs: 0 });
    expect(versions.view()).toMatchObject({ approved: null, bound: null, readAtMs: null });
    expect(await versions.refusal('v5')).toBe(
      'the escrow is bound to devshard protocol v5, which the chain does not approve: the chain approves v6; this gateway speaks v5, v4, v3',
    );
    expect(versions.view()).toMatchObject({ approved: ['v6'], supported: ['v5', 'v4', 'v3'], bound: null });
    try {
      approve('v6', 'v5');
      expect(await versions.refusal('v5')).toBeUndefined();
      expect(versions.view()).toMatchObject({ approved: ['v6', 'v5'], bound: 'v5' });
      // The chain REST fails: the last answer stays in use.
      devnet.faults.set({ chainQuery: { status: 503 } });
      expect(await versions.refusal('v5')).toBeUndefined();
      expect(await versions.refusal('v4')).toMatch(
        /the chain approves v6, v5; this gateway speaks v5, v4, v3$/,
      );
    } finally {
      devnet.faults.set({ chainQuery: undefined });
      approve('v6');
    }
  });

  it('refuses nothing before the chain answered once', async () => {
    const errors: Error[] = [];
    const versions = new ApprovedVersions({
      client: createChainClient({ chainRest: 'http://127.0.0.1:9', publicApi: 'http://127.0.0.1:9' }),
      onError: (e) => errors.push(e),
    });
    expect(await versions.refusal('v5')).toBeUndefined();
    expect(errors).toHaveLength(1);
    expect(versions.view().approved).toBeNull();
  });
});
