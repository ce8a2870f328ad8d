// The item of GET /v1/admin/devshards (spec §4 "item shape: not shown"; the gateway choice is in
// docs/gateway-spec.md §4):
// the local record, the session head's durable nonce, the pool entry (owner, status — `held` while
// in-flight reservations may bring a low balance back, upkeep/escrow-hold.ts —, balance estimate,
// reserved, nonce ceiling and routing stop) and the latest create/settle tx hashes. Never a private
// key: only where it comes from.
import { decodePoolState, escrowTable, UNKNOWN_CEILING_ROUTING_STOP } from '@gonka-gateway/shared';
import type { EscrowView } from '../admin-api.js';
import type { ControllerContext } from '../controller-context.js';

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

export async function readEscrowViews(ctx: ControllerContext, only?: bigint): Promise<EscrowView[]> {
  const rows = await escrowTable.listOverviews(ctx.sql, only);
  const pools = await Promise.all(rows.map((r) => ctx.redis.hgetall(ctx.keys.poolEscrow(r.escrowId))));
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
      escrow_id: Number(r.escrowId),
      model_id: r.modelId,
      chain_id: r.chainId,
      creator: r.creator,
      amount: r.amount.toString(),
      epoch_index: r.epochIndex.toString(),
      version: r.version,
      state: r.state,
      active: r.active,
      role: r.role,
      key_source: r.hasEncryptedKey ? 'encrypted' : r.signerKeyEnv ? 'env' : 'default',
      private_key_env: r.signerKeyEnv,
      nonce: r.lastNonce,
      pool,
      finalized: r.finalized,
      create_tx_hash: r.createTxHash,
      settle_tx_hash: r.settleTxHash,
      last_error: r.lastError,
      created_at: r.createdAt.toISOString(),
      updated_at: r.updatedAt.toISOString(),
    };
  });
}
