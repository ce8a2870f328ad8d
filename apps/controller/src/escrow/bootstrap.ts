// Env bootstrap of escrows (spec §2.10): DEVSHARDS_JSON entries (or the single
// DEVSHARD_ESCROW_ID) are registered on the FIRST start only — the start that created the settings
// row — so restarts keep whatever the operator changed through the admin API since (a deleted escrow
// does not come back). An entry that cannot be registered (chain down, wrong key, settled, model
// mismatch) is logged with the marker `escrow_bootstrap_failed` and skipped; the operator registers
// it with POST /v1/admin/devshards.
import { DEFAULT_PRIVATE_KEY_ENV, queryChainId, queryEscrow } from '@gonka-gateway/chain';
import type { EscrowMode } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { resolveCreatorKey } from './key-fields.js';
import { registerEscrow } from './register.js';

export interface BootstrapResult {
  registered: bigint[];
  failed: bigint[];
}

export async function bootstrapEscrows(ctx: ControllerContext, mode: EscrowMode): Promise<BootstrapResult> {
  const entries =
    mode.kind === 'single' ? [{ escrowId: mode.escrowId, active: true } as const] : mode.preregistered;
  const result: BootstrapResult = { registered: [], failed: [] };
  for (const entry of entries) {
    const keyEnv = ('privateKeyEnv' in entry ? entry.privateKeyEnv : undefined) ?? DEFAULT_PRIVATE_KEY_ENV;
    try {
      if ('modelId' in entry && entry.modelId !== undefined) {
        const row = (await queryEscrow(ctx.chain, entry.escrowId)).escrow;
        if (row && row.modelId !== entry.modelId) {
          throw new Error(`DEVSHARDS_JSON says model ${entry.modelId}, the chain row says ${row.modelId}`);
        }
      }
      const { key, source } = resolveCreatorKey(ctx, { private_key_env: keyEnv });
      await registerEscrow(ctx, {
        escrowId: entry.escrowId,
        chainId: await queryChainId(ctx.chain),
        keySource: source,
        creator: key.address,
        active: entry.active,
      });
      result.registered.push(entry.escrowId);
      ctx.logger.info(
        { escrowId: entry.escrowId.toString() },
        'escrow registered from the environment (first start)',
      );
    } catch (err) {
      result.failed.push(entry.escrowId);
      ctx.logger.error(
        {
          marker: 'escrow_bootstrap_failed',
          escrowId: entry.escrowId.toString(),
          err: (err as Error).message,
        },
        'escrow from the environment not registered; register it with POST /v1/admin/devshards',
      );
    }
  }
  return result;
}
