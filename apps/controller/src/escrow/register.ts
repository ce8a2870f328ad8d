// Registering an on-chain escrow with the gateway (spec §3.1 "active (registered)", §4 POST
// /v1/admin/devshards): read the row from the chain, freeze the session record (runtime version,
// timeouts; devshard-protocol.md §12 #2), create the session head FIRST and the escrows row second,
// so a claim loop never sees a routable escrow without a session. Both inserts are idempotent.
import { type DevshardEscrow, queryEscrow } from '@gonka-gateway/chain';
import {
  isSessionStoreError,
  runtimeVersionFor,
  SessionStoreErrorCode,
  sessionRecordFromChain,
  unsupportedProtocolReason,
} from '@gonka-gateway/devshard/session';
import { escrowTable, GatewayError } from '@gonka-gateway/shared';
import { inferenceParamsOrLastKnown } from '../chain/last-known.js';
import type { ControllerContext } from '../controller-context.js';

/** Where the creator key of a registered escrow comes from (escrows.signer_key_env / _encrypted). */
export type KeySource = { env: string } | { sealed: Uint8Array };

export interface RegisterInput {
  escrowId: bigint;
  chainId: string;
  keySource: KeySource;
  /** The creator address the key belongs to: the escrow must be ours. */
  creator: string;
  /** Local routing flag (spec §2.1); import registers inactive by default. */
  active: boolean;
}

export interface Registered {
  row: DevshardEscrow;
  /** false when the escrow was already registered (nothing changed). */
  inserted: boolean;
}

export async function registerEscrow(ctx: ControllerContext, input: RegisterInput): Promise<Registered> {
  // The params read also keeps their last known copy (a finalize uses it while the chain is down).
  const [queried, params] = await Promise.all([
    queryEscrow(ctx.chain, input.escrowId),
    inferenceParamsOrLastKnown(ctx),
  ]);
  const row = queried.escrow;
  if (!row) {
    throw new GatewayError('escrow_not_found', `escrow ${input.escrowId} does not exist on chain`, {
      param: 'escrow_id',
    });
  }
  if (row.creator !== input.creator) {
    throw new GatewayError(
      'invalid_request',
      `escrow ${input.escrowId} was created by ${row.creator}, not by the given key's address ${input.creator}`,
      { param: 'escrow_id' },
    );
  }
  if (row.settled) {
    throw new GatewayError('conflict', `escrow ${input.escrowId} is already settled on chain`, {
      param: 'escrow_id',
    });
  }
  const version = runtimeVersionFor(params.devshardEscrow.approvedVersions);
  if (!version) {
    throw new GatewayError(
      'unsupported_protocol_version',
      unsupportedProtocolReason(params.devshardEscrow.approvedVersions) ?? 'no supported version',
    );
  }
  const record = sessionRecordFromChain(row, params.devshardEscrow, version);
  try {
    await ctx.store.create(record);
  } catch (err) {
    if (!(isSessionStoreError(err) && err.code === SessionStoreErrorCode.Exists)) throw err;
  }
  const inserted = await escrowTable.insertEscrow(ctx.sql, {
    escrowId: row.id,
    chainId: input.chainId,
    modelId: row.modelId,
    creator: row.creator,
    amount: row.amount,
    epochIndex: row.epochIndex,
    version,
    state: 'active',
    active: input.active,
    chainRow: row.raw,
    signerKeyEnv: 'env' in input.keySource ? input.keySource.env : null,
    signerKeyEncrypted: 'sealed' in input.keySource ? input.keySource.sealed : null,
  });
  if (inserted) await ctx.redis.publish(ctx.keys.poolChanges, row.id.toString());
  return { row, inserted };
}
