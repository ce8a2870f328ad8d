// ABCI events as Cosmos REST prints them: attribute values are strings (§2.4).

export interface EventAttribute {
  key: string;
  value: string;
  index: boolean;
}

export interface TxEvent {
  type: string;
  attributes: EventAttribute[];
}

export function makeEvent(type: string, attributes: Record<string, string>): TxEvent {
  return {
    type,
    attributes: Object.entries(attributes).map(([key, value]) => ({ key, value, index: true })),
  };
}

/** The attribute SDK 0.50+ adds to every message event, so events can be told apart per message. */
export function withMsgIndex(events: TxEvent[], msgIndex: number): TxEvent[] {
  return events.map((e) => ({
    type: e.type,
    attributes: [...e.attributes, { key: 'msg_index', value: String(msgIndex), index: true }],
  }));
}

/** The outcome of one tx, as tx_response reports it. */
export interface TxResult {
  code: number;
  codespace: string;
  rawLog: string;
  events: TxEvent[];
  gasWanted: bigint;
  gasUsed: bigint;
}
