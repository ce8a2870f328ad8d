import { describe, expect, it } from 'vitest';
import { findEscrowCreatedEvents, findEscrowSettledEvents, normalizeEvents } from './events.js';
import { parseTxResponse } from './tx-response.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

const settledAttrs = [
  ['escrow_id', '42'],
  ['state_root_and_protocol_version', 'ab12…:v1'],
  ['settler', 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw'],
  ['total_payout', '4000000000'],
  ['fees', '11000'],
  ['remainder', '999989000'],
];

describe('escrow events (chain-and-network.md §2.4)', () => {
  it('reads devshard_escrow_created from tx_response.events', () => {
    const r = parseTxResponse({
      tx_response: {
        txhash: 'ab'.repeat(32),
        height: '100',
        code: 0,
        events: [
          { type: 'tx', attributes: [{ key: 'fee', value: '7000000ngonka', index: true }] },
          {
            type: 'devshard_escrow_created',
            attributes: [
              { key: 'escrow_id', value: '18446744073709551615', index: true },
              { key: 'creator', value: 'gonka1x' },
              { key: 'amount', value: '5000000000' },
              { key: 'epoch_index', value: '42' },
              { key: 'model_id', value: 'Qwen/Q' },
              { key: 'msg_index', value: '0' },
            ],
          },
        ],
      },
    });
    expect(r.txHash).toBe('AB'.repeat(32));
    expect(r.height).toBe(100n);
    expect(findEscrowCreatedEvents(r.events)).toEqual([
      {
        escrowId: 18_446_744_073_709_551_615n,
        creator: 'gonka1x',
        amount: 5_000_000_000n,
        epochIndex: 42n,
        modelId: 'Qwen/Q',
      },
    ]);
  });

  it('reads the legacy tx_response.logs[].events', () => {
    const r = parseTxResponse({
      tx_response: {
        txhash: 'AB',
        height: '5',
        code: 0,
        events: [],
        logs: [
          {
            msg_index: 0,
            events: [{ type: 'devshard_escrow_created', attributes: [{ key: 'escrow_id', value: '7' }] }],
          },
        ],
      },
    });
    expect(findEscrowCreatedEvents(r.events).map((e) => e.escrowId)).toEqual([7n]);
  });

  it('decodes base64-encoded keys and values', () => {
    const events = normalizeEvents([
      {
        type: 'devshard_escrow_settled',
        attributes: settledAttrs.map(([k, v]) => ({ key: b64(k!), value: b64(v!), index: true })),
      },
      { type: 'devshard_escrow_created', attributes: [{ key: b64('escrow_id'), value: b64('9') }] },
    ]);
    expect(findEscrowSettledEvents(events)).toEqual([
      {
        escrowId: 42n,
        stateRootAndProtocolVersion: 'ab12…:v1',
        settler: 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw',
        totalPayout: 4_000_000_000n,
        fees: 11_000n,
        remainder: 999_989_000n,
      },
    ]);
    expect(findEscrowCreatedEvents(events)[0]!.escrowId).toBe(9n);
  });

  it('does not mistake plain short keys that happen to be valid base64 for encoded ones', () => {
    const [e] = normalizeEvents([
      { type: 'devshard_escrow_settled', attributes: settledAttrs.map(([key, value]) => ({ key, value })) },
    ]);
    expect(e!.attributes.find((a) => a.key === 'fees')!.value).toBe('11000');
    expect(findEscrowSettledEvents([e!])[0]!.fees).toBe(11_000n);
  });

  it('accepts coin-string amounts and skips malformed or zero escrow ids', () => {
    const events = normalizeEvents([
      {
        type: 'devshard_escrow_settled',
        attributes: [
          { key: 'escrow_id', value: '3' },
          { key: 'total_payout', value: '12ngonka' },
        ],
      },
      { type: 'devshard_escrow_created', attributes: [{ key: 'escrow_id', value: 'x' }] },
      { type: 'devshard_escrow_created', attributes: [{ key: 'escrow_id', value: '0' }] },
    ]);
    expect(findEscrowSettledEvents(events)[0]!.totalPayout).toBe(12n);
    expect(findEscrowCreatedEvents(events)).toEqual([]);
  });
});
