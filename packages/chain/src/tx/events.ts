// Tx events (chain-and-network.md §2.4): `tx_response.events[]`, or `tx_response.logs[].events[]` on
// older nodes. Some CometBFT versions base64-encode attribute keys and values; such an event is
// recognised because every key decodes to a plain identifier (a plain key such as `fees` decodes to
// binary garbage, and `escrow_id` is not base64 at all).
import { base64 } from '@scure/base';
import { parseUint64 } from '../encoding/integer.js';

export interface TxEventAttribute {
  key: string;
  value: string;
}

export interface TxEvent {
  type: string;
  attributes: TxEventAttribute[];
}

export const ESCROW_CREATED_EVENT = 'devshard_escrow_created';
export const ESCROW_SETTLED_EVENT = 'devshard_escrow_settled';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

function decodeBase64Text(value: string): string | null {
  if (!BASE64.test(value)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(base64.decode(value));
  } catch {
    return null;
  }
}

const text = (v: unknown) => (typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v));

/** Normalises raw JSON events (plain or base64-encoded attributes) to plain strings. */
export function normalizeEvents(raw: unknown): TxEvent[] {
  if (!Array.isArray(raw)) return [];
  const events: TxEvent[] = [];
  for (const e of raw) {
    if (!e || typeof e !== 'object') continue;
    const o = e as Record<string, unknown>;
    const attrs = (Array.isArray(o.attributes) ? o.attributes : [])
      .filter((a): a is Record<string, unknown> => !!a && typeof a === 'object')
      .map((a) => ({ key: text(a.key), value: text(a.value) }));
    const decodedKeys = attrs.map((a) => decodeBase64Text(a.key));
    const encoded = attrs.length > 0 && decodedKeys.every((k) => k !== null && IDENTIFIER.test(k));
    events.push({
      type: text(o.type),
      attributes: encoded
        ? attrs.map((a, i) => ({
            key: decodedKeys[i]!,
            value: a.value === '' ? '' : (decodeBase64Text(a.value) ?? a.value),
          }))
        : attrs,
    });
  }
  return events;
}

/** Events of a tx_response JSON object: `events` first, then every `logs[].events`. */
export function txResponseEvents(txResponse: Record<string, unknown>): TxEvent[] {
  const fromLogs = (Array.isArray(txResponse.logs) ? txResponse.logs : []).flatMap((log) =>
    log && typeof log === 'object' ? normalizeEvents((log as Record<string, unknown>).events) : [],
  );
  return [...normalizeEvents(txResponse.events), ...fromLogs];
}

function attr(event: TxEvent, key: string): string | undefined {
  return event.attributes.find((a) => a.key === key)?.value;
}

/** Amount attributes may be plain integers or coin strings (`123ngonka`). */
function amount(value: string | undefined): bigint {
  if (value === undefined || value === '') return 0n;
  return parseUint64(value.replace(/ngonka$/, ''));
}

export interface EscrowCreatedEvent {
  escrowId: bigint;
  creator: string;
  amount: bigint;
  epochIndex: bigint;
  modelId: string;
}

export interface EscrowSettledEvent {
  escrowId: bigint;
  stateRootAndProtocolVersion: string;
  settler: string;
  totalPayout: bigint;
  fees: bigint;
  remainder: bigint;
}

/** Every `devshard_escrow_created` event with a valid (non-zero uint64) escrow_id. */
export function findEscrowCreatedEvents(events: readonly TxEvent[]): EscrowCreatedEvent[] {
  const out: EscrowCreatedEvent[] = [];
  for (const e of events) {
    if (e.type !== ESCROW_CREATED_EVENT) continue;
    try {
      const escrowId = parseUint64(attr(e, 'escrow_id'));
      if (escrowId === 0n) continue;
      out.push({
        escrowId,
        creator: attr(e, 'creator') ?? '',
        amount: amount(attr(e, 'amount')),
        epochIndex: amount(attr(e, 'epoch_index')),
        modelId: attr(e, 'model_id') ?? '',
      });
    } catch {
      // A malformed event is not an escrow id; the caller sees "no event" and keeps the tx hash.
    }
  }
  return out;
}

export function findEscrowSettledEvents(events: readonly TxEvent[]): EscrowSettledEvent[] {
  const out: EscrowSettledEvent[] = [];
  for (const e of events) {
    if (e.type !== ESCROW_SETTLED_EVENT) continue;
    try {
      out.push({
        escrowId: parseUint64(attr(e, 'escrow_id')),
        stateRootAndProtocolVersion: attr(e, 'state_root_and_protocol_version') ?? '',
        settler: attr(e, 'settler') ?? '',
        totalPayout: amount(attr(e, 'total_payout')),
        fees: amount(attr(e, 'fees')),
        remainder: amount(attr(e, 'remainder')),
      });
    } catch {
      // As above.
    }
  }
  return out;
}
