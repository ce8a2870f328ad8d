// `tx_response` of POST /cosmos/tx/v1beta1/txs and GET /cosmos/tx/v1beta1/txs/{hash}
// (chain-and-network.md §2.4, §3.1).
import { asObject, int, type JsonObject, reqObject, str, u32 } from '../query/json-fields.js';
import { type TxEvent, txResponseEvents } from './events.js';

export interface TxResponse {
  txHash: string;
  height: bigint;
  /** 0 = success. */
  code: number;
  codespace: string;
  rawLog: string;
  gasWanted: bigint;
  gasUsed: bigint;
  /** `events` plus legacy `logs[].events`, attributes decoded. */
  events: TxEvent[];
}

export function parseTxResponse(json: unknown): TxResponse {
  const r: JsonObject = reqObject(asObject(json, ''), 'tx_response', '');
  const p = 'tx_response';
  return {
    txHash: str(r, 'txhash', p).toUpperCase(),
    height: int(r, 'height', p),
    code: u32(r, 'code', p),
    codespace: str(r, 'codespace', p),
    rawLog: str(r, 'raw_log', p),
    gasWanted: int(r, 'gas_wanted', p),
    gasUsed: int(r, 'gas_used', p),
    events: txResponseEvents(r),
  };
}
