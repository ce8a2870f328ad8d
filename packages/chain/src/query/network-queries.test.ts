import { describe, expect, it } from 'vitest';
import { parseGovernanceModels } from './governance-models.js';
import { parseParticipants } from './participants.js';
import { parseRfc3339Ns, parseRpcStatus } from './rpc-status.js';

describe('CometBFT /status', () => {
  it('reads string heights and a nanosecond block time', () => {
    const s = parseRpcStatus({
      jsonrpc: '2.0',
      id: -1,
      result: {
        node_info: { network: 'gonka-mainnet', version: '0.38.17' },
        sync_info: {
          latest_block_height: '1234567',
          latest_block_time: '2025-10-09T08:53:20.123456789Z',
          catching_up: false,
        },
        validator_info: {},
      },
    });
    expect(s).toEqual({
      latestBlockHeight: 1_234_567n,
      latestBlockTime: '2025-10-09T08:53:20.123456789Z',
      latestBlockTimeNs: 1_760_000_000_123_456_789n,
      chainId: 'gonka-mainnet',
    });
  });

  it('parses RFC 3339 offsets and rejects garbage', () => {
    expect(parseRfc3339Ns('2025-10-09T10:53:20+02:00')).toBe(1_760_000_000_000_000_000n);
    expect(parseRfc3339Ns('yesterday')).toBeNull();
  });

  it('requires the height', () => {
    expect(() => parseRpcStatus({ result: { sync_info: {} } })).toThrow(/latest_block_height/);
  });
});

describe('participants', () => {
  it('drops excluded participants and keeps proof fields out of the typed view', () => {
    const snap = parseParticipants({
      active_participants: {
        participants: [
          {
            index: 'gonka1a',
            inference_url: 'http://a:8000',
            weight: 10,
            models: ['m1'],
            ml_nodes: [{ ml_nodes: [] }],
          },
          { index: 'gonka1b', inference_url: 'http://b:8000', weight: '20', models: [] },
          { index: 'gonka1c', inference_url: '', weight: 1 },
        ],
        epoch_group_id: 9,
      },
      active_participants_bytes: 'deadbeef',
      proof_ops: { ops: [] },
      excluded_participants: [{ address: 'gonka1b', reason: 'downtime' }],
    });
    expect(snap.participants.map((p) => p.address)).toEqual(['gonka1a', 'gonka1c']);
    expect(snap.participants[0]!.weight).toBe(10n);
    expect(snap.excludedAddresses).toEqual(['gonka1b']);
  });
});

describe('governance models', () => {
  it('reads models with optional fields', () => {
    const [m] = parseGovernanceModels({
      models: [
        {
          id: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
          proposed_by: 'gonka10d07y265gmmuvt4z0w9aw880jnsr700j2h5m33',
          units_of_compute_per_token: '1000',
          hf_repo: 'Qwen/Qwen3',
          hf_commit: 'abc',
          model_args: ['--tp', '8'],
          v_ram: 640,
          throughput_per_nonce: '10000',
          validation_threshold: { value: '97', exponent: -2 },
        },
      ],
    });
    expect(m).toMatchObject({
      unitsOfComputePerToken: 1000n,
      vRam: 640n,
      contextWindow: null,
      validationThreshold: { value: 97n, exponent: -2 },
    });
  });
});
