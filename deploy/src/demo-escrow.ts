// The demo's first escrow, opened by ./start through the admin API exactly as an operator would
// (POST /v1/admin/escrows via {gateway_url}, spec §4), so a fresh clone can chat at once. It also
// sets the model's access mode to api_key, because a model is admin-only for user keys until then.
// An escrow already registered is reused only when it exists on THIS devnet, by this creator and
// unsettled: the devnet starts empty every time while the database persists across restarts.
import { type ChainClient, queryEscrow } from '@gonka-gateway/chain';

export interface DemoEscrowOptions {
  gatewayUrl: string;
  adminKey: string;
  chainId: string;
  chain: ChainClient;
  creator: string;
  modelId: string;
  /** Deposit in ngonka. */
  amount: bigint;
  /** Base URLs of each replica (http://127.0.0.1:port), to wait until every one can route the model. */
  replicaUrls: string[];
  /** The user key the printed snippets use. */
  userKey: string;
  say(line: string): void;
}

export interface DemoEscrow {
  escrowId: number;
  created: boolean;
}

async function admin(
  o: DemoEscrowOptions,
  method: string,
  path: string,
  body?: object,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${o.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${o.adminKey}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (res.status >= 300) {
    const error = (json.error as { message?: string } | undefined)?.message ?? text;
    throw new Error(`${method} ${path} answered ${res.status}: ${error}`);
  }
  return { status: res.status, json };
}

async function servingCount(replicaUrls: string[]): Promise<number> {
  let n = 0;
  for (const url of replicaUrls) {
    const body = (await fetch(`${url}/v1/status`, { signal: AbortSignal.timeout(5_000) })
      .then((r) => r.json())
      .catch(() => ({}))) as { runtimes?: { status: string }[] };
    n += (body.runtimes ?? []).filter((r) => r.status === 'serving').length;
  }
  return n;
}

/**
 * Whether every replica lists the model for the user key: each keeps its own copy of the settings
 * (access mode) and of the pool, updated when the controller or an owner announces a change (Redis
 * pub/sub), and the load balancer may send the next snippet to either.
 */
async function everyReplicaRoutes(o: DemoEscrowOptions): Promise<boolean> {
  for (const url of o.replicaUrls) {
    const body = (await fetch(`${url}/v1/models`, {
      headers: { authorization: `Bearer ${o.userKey}` },
      signal: AbortSignal.timeout(5_000),
    })
      .then((r) => r.json())
      .catch(() => ({}))) as { data?: { id: string }[] };
    if (!(body.data ?? []).some((m) => m.id === o.modelId)) return false;
  }
  return true;
}

interface EscrowRow {
  escrow_id: number;
  model_id: string;
  state: string;
  active: boolean;
}

export async function ensureDemoEscrow(o: DemoEscrowOptions): Promise<DemoEscrow> {
  const list = await admin(o, 'GET', '/v1/admin/devshards');
  const rows = (list.json.data as EscrowRow[] | undefined) ?? [];
  let reusable: EscrowRow | undefined;
  for (const row of rows) {
    if (!row.active || row.state !== 'active' || row.model_id !== o.modelId) continue;
    const onChain = await queryEscrow(o.chain, BigInt(row.escrow_id)).catch(() => undefined);
    if (onChain?.escrow && onChain.escrow.creator === o.creator && !onChain.escrow.settled) {
      reusable = row;
      break;
    }
  }
  let escrow: DemoEscrow;
  if (reusable) {
    escrow = { escrowId: reusable.escrow_id, created: false };
    o.say(`escrow ${escrow.escrowId} already registered; reusing it`);
  } else {
    o.say(`opening an escrow: ${o.amount} ngonka for ${o.modelId}, broadcasting…`);
    const created = await admin(o, 'POST', '/v1/admin/escrows', {
      amount: o.amount.toString(),
      model_id: o.modelId,
      chain_id: o.chainId,
      private_key_env: 'DEVSHARD_PRIVATE_KEY',
      register: true,
    });
    escrow = { escrowId: created.json.escrow_id as number, created: true };
    o.say(`  included: tx ${created.json.tx_hash}, escrow ${escrow.escrowId}`);
    o.say(`  registered: ${created.json.registered ? 'yes' : 'no'}`);
  }

  const settings = await admin(o, 'GET', '/v1/admin/settings');
  const limits =
    (settings.json.model_limits as { model_id: string; access_mode: string }[] | undefined) ?? [];
  if (!limits.some((m) => m.model_id === o.modelId && m.access_mode === 'api_key')) {
    await admin(o, 'POST', '/v1/admin/settings', {
      model_limits: [
        ...limits.filter((m) => m.model_id !== o.modelId),
        { model_id: o.modelId, access_mode: 'api_key' },
      ],
    });
    o.say(`  access mode of ${o.modelId}: api_key (user keys may chat)`);
  }

  // A replica claims the registered escrow on its next poll; wait so the printed curl works at once.
  const deadline = Date.now() + 60_000;
  while ((await servingCount(o.replicaUrls)) === 0 || !(await everyReplicaRoutes(o))) {
    if (Date.now() > deadline) throw new Error(`no replica serves escrow ${escrow.escrowId} after 60 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
  o.say(`  serving: escrow ${escrow.escrowId} claimed by a replica`);
  return escrow;
}
