// A fake chain REST + public node for CLI tests: enough state for escrow create/show/settle-status,
// publish-pubkey, balance, params and signed direct requests.
import type { ServerResponse } from 'node:http';
import {
  createGonkaRegistry,
  directRequestMessage,
  PrivateKey,
  readFields,
  sha256,
  txHash,
  verifyDigest64,
} from '@gonka-gateway/chain';
import {
  type FakeServer,
  json,
  PROVIDER,
  type Recorded,
  startFakeServer,
  TEST_ADDRESS,
  TEST_KEY,
} from './cli-harness.js';

export interface FakeNetworkState {
  allowedCreators: string[];
  balance: bigint;
  pubKeyPublished: boolean;
  /** What the next broadcast does. */
  broadcast: 'commit' | 'commit-then-drop' | 'drop' | 'refuse';
  nextEscrowId: bigint;
  txs: Map<string, Record<string, unknown>>;
  escrows: Map<string, Record<string, unknown>>;
  currentEpoch: bigint;
}

export interface FakeNetwork extends FakeServer {
  state: FakeNetworkState;
}

const PARAMS_PATH = '/productscience/inference/inference/params';

export async function startFakeNetwork(over: Partial<FakeNetworkState> = {}): Promise<FakeNetwork> {
  const state: FakeNetworkState = {
    allowedCreators: [TEST_ADDRESS],
    balance: 20_000_000_000n,
    pubKeyPublished: false,
    broadcast: 'commit',
    nextEscrowId: 41n,
    txs: new Map(),
    escrows: new Map(),
    currentEpoch: 42n,
    ...over,
  };
  const registry = createGonkaRegistry();
  const requester = PrivateKey.fromHex(TEST_KEY);

  const commit = (hash: string, txBytes: Uint8Array) => {
    const body = readFields(txBytes).find((f) => f.field === 1 && f.wireType === 2);
    // decodeTxBody decodes each Any through the registry, whatever its static type says.
    const decoded: unknown = registry.decodeTxBody((body as { bytes: Uint8Array }).bytes).messages[0];
    const msg = decoded as Record<string, unknown>;
    const events: unknown[] = [];
    if ('modelId' in msg) {
      const id = state.nextEscrowId++;
      state.escrows.set(id.toString(), {
        id: id.toString(),
        creator: msg.creator,
        amount: String(msg.amount),
        slots: Array(16).fill(PROVIDER),
        epoch_index: state.currentEpoch.toString(),
        settled: false,
        model_id: msg.modelId,
        create_devshard_fee: '10000',
        fee_per_nonce: '1000',
        validation_rate: 1000,
        max_nonce: 1000000,
      });
      events.push({
        type: 'devshard_escrow_created',
        attributes: [{ key: 'escrow_id', value: id.toString() }],
      });
    } else state.pubKeyPublished = true;
    state.txs.set(hash, { txhash: hash, height: '500', code: 0, gas_used: '90000', events });
  };

  const routes = [
    (r: Recorded, res: ServerResponse) =>
      r.path === '/cosmos/base/tendermint/v1beta1/node_info' &&
      json(res, 200, { default_node_info: { network: 'gonka-devnet' } }),
    (r: Recorded, res: ServerResponse) =>
      r.path === `/cosmos/auth/v1beta1/accounts/${TEST_ADDRESS}` &&
      json(res, 200, {
        account: {
          '@type': '/cosmos.auth.v1beta1.BaseAccount',
          address: TEST_ADDRESS,
          pub_key: state.pubKeyPublished
            ? {
                '@type': '/cosmos.crypto.secp256k1.PubKey',
                key: Buffer.from(requester.publicKey).toString('base64'),
              }
            : null,
          account_number: '8',
          sequence: '0',
        },
      }),
    (r: Recorded, res: ServerResponse) =>
      (r.path.startsWith('/cosmos/bank/v1beta1/balances/') ||
        r.path.startsWith('/cosmos/bank/v1beta1/spendable_balances/')) &&
      json(res, 200, {
        balances: [{ denom: 'ngonka', amount: state.balance.toString() }],
        pagination: { total: '1' },
      }),
    (r: Recorded, res: ServerResponse) =>
      r.path === PARAMS_PATH &&
      json(res, 200, {
        params: {
          devshard_escrow_params: {
            min_amount: '5000000000',
            max_amount: '10000000000',
            allowed_creator_addresses: state.allowedCreators,
            group_size: 16,
            max_nonce: 1000000,
          },
          fee_params: { min_gas_price_ngonka: '0', enabled_fee_groups: [], groups: [] },
          transfer_agent_access_params: { allowed_transfer_addresses: [PROVIDER] },
        },
      }),
    (r: Recorded, res: ServerResponse) => {
      if (r.method !== 'POST' || r.path !== '/cosmos/tx/v1beta1/txs') return false;
      const bytes = Buffer.from((JSON.parse(r.body.toString()) as { tx_bytes: string }).tx_bytes, 'base64');
      const hash = txHash(bytes);
      if (state.broadcast === 'refuse')
        return json(res, 200, {
          tx_response: { txhash: hash, code: 5, codespace: 'sdk', raw_log: 'insufficient funds' },
        });
      if (state.broadcast !== 'drop') commit(hash, bytes);
      if (state.broadcast === 'drop' || state.broadcast === 'commit-then-drop') {
        res.socket?.destroy();
        return true;
      }
      return json(res, 200, { tx_response: { txhash: hash, code: 0 } });
    },
    (r: Recorded, res: ServerResponse) => {
      const m = /^\/cosmos\/tx\/v1beta1\/txs\/([0-9A-F]{64})$/.exec(r.path);
      if (!m) return false;
      const tx = state.txs.get(m[1]!);
      return tx ? json(res, 200, { tx_response: tx }) : json(res, 404, { code: 5, message: 'tx not found' });
    },
    (r: Recorded, res: ServerResponse) => {
      const m = /^\/productscience\/inference\/inference\/devshard_escrow\/(\d+)$/.exec(r.path);
      if (!m) return false;
      const escrow = state.escrows.get(m[1]!);
      return escrow ? json(res, 200, { escrow, found: true }) : json(res, 200, { found: false });
    },
    (r: Recorded, res: ServerResponse) =>
      r.path === '/v1/epochs/latest' &&
      json(res, 200, {
        block_height: 1000,
        phase: 'Inference',
        latest_epoch: { index: Number(state.currentEpoch), poc_start_block_height: 900 },
      }),
    (r: Recorded, res: ServerResponse) =>
      r.path === '/v1/epochs/current/participants' &&
      json(res, 200, {
        active_participants: {
          participants: [
            { index: PROVIDER, inference_url: `${serverUrl}/node`, weight: 5 },
            { index: 'gonka1notallowed', inference_url: `${serverUrl}/other`, weight: 5 },
          ],
        },
      }),
    (r: Recorded, res: ServerResponse) => {
      if (r.method !== 'POST' || !r.path.endsWith('/v1/chat/completions')) return false;
      const ts = BigInt(String(r.headers['x-timestamp']));
      const msg = directRequestMessage('body-sha256', r.body, ts, PROVIDER);
      if (
        !verifyDigest64(
          Buffer.from(String(r.headers.authorization), 'base64'),
          sha256(msg),
          requester.publicKey,
        )
      ) {
        return json(res, 401, { error: 'invalid signature' });
      }
      if (r.path.startsWith('/other')) return json(res, 403, { error: 'Transfer Agent not allowed' });
      if ((JSON.parse(r.body.toString()) as { stream?: boolean }).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\ndata: {"choices":[{"delta":{"content":"lo"}}]}\n\ndata: [DONE]\n\n',
        );
        return true;
      }
      return json(res, 200, {
        id: 'x',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello back' } }],
      });
    },
  ];
  const server = await startFakeServer(routes);
  const serverUrl = server.url;
  return { ...server, state };
}
