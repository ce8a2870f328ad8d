// The reconciliation pass (architecture §3; chain-and-network.md §2.4): every commitment still
// `prepared`, `broadcast` or `unknown` is looked up by its hash. Found → its outcome is recorded
// (included or failed); not found past the tx's timeout plus margin → `expired` (it can never land,
// so a new tx for that business key is safe); otherwise it is left alone. Nothing is ever signed or
// sent here, so the job is safe to run any number of times and on two controllers at once.
// An included create is then finished as its request asked (registered with the key source stored
// in its commitment, the answer stored for a retry with the same Idempotency-Key): a controller
// killed between broadcast and result registers the escrow on its next pass (architecture §3).
import { type Commitment, reconcileCommitment } from '../chain/commitments.js';
import type { ControllerContext } from '../controller-context.js';
import { finishReconciledCreate } from '../escrow/create.js';

export interface ReconcileSummary {
  checked: number;
  included: number;
  failed: number;
  expired: number;
  pending: number;
  unreachable: number;
}

export async function reconcileOpenCommitments(
  ctx: ControllerContext,
  only?: string,
): Promise<ReconcileSummary> {
  const rows = await ctx.sql<
    {
      tx_hash: string;
      kind: Commitment['kind'];
      business_key: string;
      status: Commitment['status'];
      expires_at: Date;
    }[]
  >`select tx_hash, kind, business_key, status, expires_at from chain_tx_commitments
     where status in ('prepared', 'broadcast', 'unknown')
       and (${only ?? null}::text is null or tx_hash = ${only ?? null})
     order by created_at limit 500`;
  const summary: ReconcileSummary = {
    checked: 0,
    included: 0,
    failed: 0,
    expired: 0,
    pending: 0,
    unreachable: 0,
  };
  for (const r of rows) {
    const commitment: Commitment = {
      txHash: r.tx_hash,
      kind: r.kind,
      businessKey: r.business_key,
      escrowId: null,
      txBytes: new Uint8Array(),
      status: r.status,
      expiresAt: r.expires_at,
      code: null,
      rawLog: null,
      result: null,
    };
    const result = await reconcileCommitment(ctx.sql, ctx.chain, commitment);
    summary.checked++;
    summary[result.kind]++;
    if (result.kind === 'included' && r.kind === 'create_escrow') {
      await finishReconciledCreate(ctx, r.tx_hash).catch((err: Error) =>
        ctx.logger.warn({ txHash: r.tx_hash, err: err.message }, 'reconciled create not registered yet'),
      );
    }
    if (result.kind !== 'pending')
      ctx.logger.info({ txHash: r.tx_hash, kind: r.kind, result: result.kind }, 'commitment reconciled');
  }
  return summary;
}
