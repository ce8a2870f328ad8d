// The item of GET /v1/admin/devshards (spec §4 "item shape: not shown"; the README's choices table):
// the local record, the session head's durable nonce, the pool entry (owner, status — `held` while
// in-flight reservations may bring a low balance back, upkeep/escrow-hold.ts —, balance estimate,
// reserved, nonce ceiling and routing stop) and the latest create/settle tx hashes. Never a private
// key: only where it comes from.
import { decodePoolState, UNKNOWN_CEILING_ROUTING_STOP } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';

export interface EscrowView {
  escrow_id: number;
  model_id: string;
  chain_id: string;
  creator: string;
  /** ngonka, decimal string (uint64). */
  amount: string;
  epoch_index: string;
  version: string;
  state: string;
  active: boolean;
  role: string;
  key_source: 'env' | 'encrypted' | 'default';
  private_key_env: string | null;
  nonce: string | null;
  pool: {
    status: string;
    owner: string | null;
    balance_estimate: string;
    /** ngonka held by in-flight reservations (what may return to the balance). */
    reserved: string;
    /** The escrow's max_nonce as its owner knows it; null while unknown (shared nonce-routing.ts). */
    nonce_ceiling: string | null;
    /** Where routing stops for the nonce: max_nonce − (N + 1) − 200, or 19,800 while unknown. */
    routing_stop: string;
    cause: string | null;
  } | null;
  finalized: boolean;
  create_tx_hash: string | null;
  settle_tx_hash: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export const escrowViewSchema = {
  type: 'object',
  required: ['escrow_id', 'model_id', 'state', 'active'],
  properties: {
    escrow_id: { type: 'integer' },
    model_id: { type: 'string' },
    chain_id: { type: 'string' },
    creator: { type: 'string' },
    amount: { type: 'string' },
    epoch_index: { type: 'string' },
    version: { type: 'string' },
    state: { type: 'string' },
    active: { type: 'boolean' },
    role: { type: 'string' },
    key_source: { type: 'string', enum: ['env', 'encrypted', 'default'] },
    private_key_env: { type: ['string', 'null'] },
    nonce: { type: ['string', 'null'] },
    pool: {
      type: ['object', 'null'],
      properties: {
        status: { type: 'string' },
        owner: { type: ['string', 'null'] },
        balance_estimate: { type: 'string' },
        reserved: { type: 'string' },
        nonce_ceiling: { type: ['string', 'null'] },
        routing_stop: { type: 'string' },
        cause: { type: ['string', 'null'] },
      },
    },
    finalized: { type: 'boolean' },
    create_tx_hash: { type: ['string', 'null'] },
    settle_tx_hash: { type: ['string', 'null'] },
    last_error: { type: ['string', 'null'] },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
} as const;

/** The selected row: the view's columns that come back as they are, plus what the rest derive from. */
type Row = Pick<
  EscrowView,
  | 'model_id'
  | 'chain_id'
  | 'creator'
  | 'amount'
  | 'epoch_index'
  | 'version'
  | 'state'
  | 'active'
  | 'role'
  | 'finalized'
  | 'create_tx_hash'
  | 'settle_tx_hash'
  | 'last_error'
> & {
  escrow_id: string;
  signer_key_env: string | null;
  encrypted: boolean;
  last_nonce: string | null;
  created_at: Date;
  updated_at: Date;
};

export async function readEscrowViews(ctx: ControllerContext, only?: bigint): Promise<EscrowView[]> {
  const id = only === undefined ? null : only.toString();
  const rows = await ctx.sql<Row[]>`
    select e.escrow_id::text as escrow_id, e.model_id, e.chain_id, e.creator, e.amount::text as amount,
           e.epoch_index::text as epoch_index, e.version, e.state, e.active, e.role, e.signer_key_env,
           e.signer_key_encrypted is not null as encrypted, h.last_nonce::text as last_nonce,
           (f.escrow_id is not null or h.finalize_document is not null) as finalized,
           (select c.tx_hash from chain_tx_commitments c where c.escrow_id = e.escrow_id and c.kind = 'create_escrow'
             and c.status = 'included' limit 1) as create_tx_hash,
           (select c.tx_hash from chain_tx_commitments c where c.escrow_id = e.escrow_id and c.kind = 'settle_escrow'
             order by c.created_at desc limit 1) as settle_tx_hash,
           e.last_error, e.created_at, e.updated_at
      from escrows e
      left join session_heads h on h.escrow_id = e.escrow_id
      left join finalize_documents f on f.escrow_id = e.escrow_id
     where ${id}::numeric is null or e.escrow_id = ${id}::numeric
     order by e.escrow_id`;
  const pools = await Promise.all(
    rows.map((r) => ctx.redis.hgetall(ctx.keys.poolEscrow(BigInt(r.escrow_id)))),
  );
  return rows.map((r, i) => {
    let pool: EscrowView['pool'] = null;
    try {
      const p = decodePoolState(pools[i] ?? {});
      if (p)
        pool = {
          status: p.status,
          owner: p.owner,
          balance_estimate: p.balanceEstimate.toString(),
          reserved: (p.reserved ?? 0n).toString(),
          nonce_ceiling: p.nonceCeiling?.toString() ?? null,
          routing_stop: (p.routingStop ?? UNKNOWN_CEILING_ROUTING_STOP).toString(),
          cause: p.cause ?? null,
        };
    } catch {
      pool = null; // a malformed entry is the owner's to rewrite; the list still answers
    }
    return {
      escrow_id: Number(r.escrow_id),
      model_id: r.model_id,
      chain_id: r.chain_id,
      creator: r.creator,
      amount: r.amount,
      epoch_index: r.epoch_index,
      version: r.version,
      state: r.state,
      active: r.active,
      role: r.role,
      key_source: r.encrypted ? 'encrypted' : r.signer_key_env ? 'env' : 'default',
      private_key_env: r.signer_key_env,
      nonce: r.last_nonce,
      pool,
      finalized: r.finalized,
      create_tx_hash: r.create_tx_hash,
      settle_tx_hash: r.settle_tx_hash,
      last_error: r.last_error,
      created_at: new Date(r.created_at).toISOString(),
      updated_at: new Date(r.updated_at).toISOString(),
    };
  });
}
