// The demo's escrows, opened by ./start through the admin API exactly as an operator would
// (POST /v1/admin/escrows via {gateway_url}, spec §4), so a fresh clone can chat at once. It also
// sets the model's access mode to api_key, because a model is admin-only for user keys until then.
// An escrow already registered is reused only when it exists on THIS devnet, by this creator and
// unsettled: the devnet starts empty every time while the database persists across restarts.
//
// One escrow per proxy replica: a request that lands on a replica owning no escrow of its model is
// forwarded to an owner (architecture §2.4), so with one escrow behind a round-robin load balancer
// half the requests would pay two proxies. The replicas spread the escrows one each (the claim
// loop's spreading, escrow-runtime claim/fair-share.ts); the escrows are opened one after another
// because they share the creator account's sequence.
import { type ChainClient, queryEscrow } from '@gonka-gateway/chain';

export interface DemoEscrowOptions {
  gatewayUrl: string;
  adminKey: string;
  chainId: string;
  chain: ChainClient;
  creator: string;
  modelId: string;
  /** Deposit of each escrow, in ngonka. */
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

/** What ./start prints about who serves the demo escrows. */
export interface DemoEscrows {
  escrows: DemoEscrow[];
  /** Whether every replica serves one of them itself (no request is forwarded in steady state). */
  spread: boolean;
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

/** The escrows each replica serves now (its /v1/status runtimes), in the order of replicaUrls. */
async function servedBy(replicaUrls: string[]): Promise<string[][]> {
  return Promise.all(
    replicaUrls.map(async (url) => {
      const body = (await fetch(`${url}/v1/status`, { signal: AbortSignal.timeout(5_000) })
        .then((r) => r.json())
        .catch(() => ({}))) as { runtimes?: { escrow_id: string; status: string }[] };
      return (body.runtimes ?? []).filter((r) => r.status === 'serving').map((r) => r.escrow_id);
    }),
  );
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

/** Opens (or reuses) `count` escrows of the model and waits until they are served. */
export async function ensureDemoEscrows(o: DemoEscrowOptions, count: number): Promise<DemoEscrows> {
  const list = await admin(o, 'GET', '/v1/admin/devshards');
  const rows = (list.json.data as EscrowRow[] | undefined) ?? [];
  const escrows: DemoEscrow[] = [];
  for (const row of rows) {
    if (escrows.length >= count) break;
    if (!row.active || row.state !== 'active' || row.model_id !== o.modelId) continue;
    const onChain = await queryEscrow(o.chain, BigInt(row.escrow_id)).catch(() => undefined);
    if (onChain?.escrow && onChain.escrow.creator === o.creator && !onChain.escrow.settled) {
      escrows.push({ escrowId: row.escrow_id, created: false });
      o.say(`escrow ${row.escrow_id} already registered; reusing it`);
    }
  }
  const missing = count - escrows.length;
  for (let i = 0; i < missing; i++) {
    const which = missing > 1 ? ` (${i + 1} of ${missing})` : '';
    o.say(`opening an escrow${which}: ${o.amount} ngonka for ${o.modelId}, broadcasting…`);
    const created = await admin(o, 'POST', '/v1/admin/escrows', {
      amount: o.amount.toString(),
      model_id: o.modelId,
      chain_id: o.chainId,
      private_key_env: 'DEVSHARD_PRIVATE_KEY',
      register: true,
    });
    const escrow = { escrowId: created.json.escrow_id as number, created: true };
    escrows.push(escrow);
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

  // The replicas claim a registered escrow at once (its announcement); wait until every escrow is
  // served and every replica routes the model, so the printed curl works at once. Spreading one
  // escrow to each replica takes a claim pass or two more: waited for briefly, and reported as it is.
  const ids = new Set(escrows.map((e) => String(e.escrowId)));
  const deadline = Date.now() + 60_000;
  let served: string[][] = [];
  const allServed = () => [...ids].every((id) => served.some((s) => s.includes(id)));
  const spread = () => served.every((s) => s.some((id) => ids.has(id)));
  for (;;) {
    served = await servedBy(o.replicaUrls);
    if (allServed() && (await everyReplicaRoutes(o))) break;
    if (Date.now() > deadline) {
      throw new Error(`escrows ${[...ids].join(', ')} are not all served after 60 s`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const spreadDeadline = Date.now() + 10_000;
  while (ids.size >= o.replicaUrls.length && !spread() && Date.now() < spreadDeadline) {
    await new Promise((r) => setTimeout(r, 250));
    served = await servedBy(o.replicaUrls);
  }
  if (o.replicaUrls.length === 1) {
    o.say(`  serving: ${[...ids].map((id) => `escrow ${id}`).join(', ')} claimed by the replica`);
  } else {
    const byReplica = o.replicaUrls.map((url, i) => {
      const mine = served[i]!.filter((id) => ids.has(id));
      const what = mine.length === 0 ? 'no escrow' : `escrow${mine.length > 1 ? 's' : ''} ${mine.join(', ')}`;
      return `${what} on :${new URL(url).port}`;
    });
    o.say(`  serving: ${byReplica.join(', ')}`);
  }
  return { escrows, spread: spread() };
}
