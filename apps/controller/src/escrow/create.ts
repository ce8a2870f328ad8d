// Creating an escrow (spec §3.1 row 1, §4). Everything that can be
// checked before signing is checked, and the answer names the field: chain id, model known to
// governance, a devshard protocol version this gateway speaks among approved_versions (else 409
// `unsupported_protocol_version`), creator on `allowed_creator_addresses` (spec §1.8: only governance
// adds it), min_amount ≤ amount ≤ max_amount, spendable ≥ amount + fee (keeper rule 7). Then the
// signed tx's hash and bytes are committed (chain_tx_commitments) before broadcast, by
// chain/committed-tx.ts (the one commit-broadcast-reconcile routine). Creates with the same
// business key (one Idempotency-Key, one rotation slot) run one at a time (advisory lock) and a
// retry resumes the first attempt's commitment: included → the first answer; unknown → the chain is
// asked about that hash, and only the same bytes are ever re-sent — so one key never creates a
// second escrow. The admin route runs this in the `create-escrow` job (jobs/create-escrow-job.ts).
import { createHash, randomUUID } from 'node:crypto';
import {
  findEscrowCreatedEvents,
  lookupTx,
  type PreparedTx,
  type PrivateKey,
  queryChainId,
  queryGovernanceModels,
  queryInferenceParams,
  querySpendableBalance,
  type TxIncluded,
  type TxOutcome,
} from '@gonka-gateway/chain';
import { unsupportedProtocolReason } from '@gonka-gateway/devshard/session';
import { GatewayError } from '@gonka-gateway/shared';
import { liveCommitment, mergeResult, recordOutcome, withBusinessLock } from '../chain/commitments.js';
import { runCommittedTx } from '../chain/committed-tx.js';
import { readFromNode } from '../chain/node-read.js';
import type { ControllerContext } from '../controller-context.js';
import { type KeySource, registerEscrow } from './register.js';

export interface CreateEscrowRequest {
  amount: bigint;
  modelId: string;
  chainId: string;
  register: boolean;
  key: PrivateKey;
  keySource: KeySource;
  idempotencyKey?: string;
  /**
   * The create's request key (createRequestKey) when the caller fixed it: the admin route does, so
   * every attempt of its job resumes one commitment even without an Idempotency-Key (a fresh id per
   * attempt would sign a new tx on each retry).
   */
  requestKey?: string;
}

/**
 * An answer that another attempt of the same create would only repeat — the chain refused the tx,
 * or its outcome is unknown (then the reconcile pass and a retry with the key ask the chain by
 * hash; nothing is re-sent blindly). The create job ends on it without retrying.
 */
export class FinalCreateError extends GatewayError {}

export interface CreateEscrowResponse {
  /** Spec §2.1: an integer. Escrow ids are a chain counter, far below 2^53. */
  escrow_id: number;
  tx_hash: string;
  creator: string;
  registered: boolean;
}

/** What identifies a request for its Idempotency-Key: a different request under one key is refused. */
export interface RequestFingerprint {
  amount: string;
  model_id: string;
  chain_id: string;
  register: boolean;
  creator: string;
}

/** How the key source of a create is kept in its commitment, so a reconciliation can register it. */
export type StoredKeySource = { env: string } | { sealed: string };

export const storeKeySource = (source: KeySource): StoredKeySource =>
  'env' in source ? { env: source.env } : { sealed: Buffer.from(source.sealed).toString('base64') };

export const loadKeySource = (stored: StoredKeySource): KeySource =>
  'env' in stored ? { env: stored.env } : { sealed: new Uint8Array(Buffer.from(stored.sealed, 'base64')) };

/** What registering an included create needs: from the request, or from its commitment after a crash. */
interface RegisterTarget {
  register: boolean;
  chainId: string;
  keySource: KeySource;
  creator: string;
}

const targetOf = (req: CreateEscrowRequest): RegisterTarget => ({
  register: req.register,
  chainId: req.chainId,
  keySource: req.keySource,
  creator: req.key.address,
});

/** Field by field: the stored copy is jsonb, whose key order is not the insertion order. */
export function sameRequest(stored: RequestFingerprint | null, now: RequestFingerprint): boolean {
  if (!stored) return false;
  return (Object.keys(now) as (keyof RequestFingerprint)[]).every((k) => stored[k] === now[k]);
}

/**
 * What names one create in its commitment and its job: the SHA-256 hex of its Idempotency-Key (the
 * key itself is stored nowhere), or `request-<uuid>` for a request without one.
 */
export function createRequestKey(idempotencyKey: string | undefined): string {
  if (idempotencyKey === undefined) return `request-${randomUUID()}`;
  return createHash('sha256').update(idempotencyKey).digest('hex');
}

const businessKeyOf = (requestKey: string): string =>
  requestKey.startsWith('request-')
    ? `create_escrow:request:${requestKey.slice('request-'.length)}`
    : `create_escrow:idempotency:${requestKey}`;

export function createBusinessKey(idempotencyKey: string | undefined): string {
  return businessKeyOf(createRequestKey(idempotencyKey));
}

const businessKeyOfRequest = (req: CreateEscrowRequest): string =>
  businessKeyOf(req.requestKey ?? createRequestKey(req.idempotencyKey));

export const fingerprintOf = (req: CreateEscrowRequest): RequestFingerprint => ({
  amount: req.amount.toString(),
  model_id: req.modelId,
  chain_id: req.chainId,
  register: req.register,
  creator: req.key.address,
});

/** A different request under a used Idempotency-Key (committed, or waiting in the create queue). */
export const idempotencyConflict = (): GatewayError =>
  new GatewayError(
    'conflict',
    'this Idempotency-Key was already used for a different escrow request (amount, model_id, chain_id, register or key differ)',
    { param: 'Idempotency-Key' },
  );

/**
 * What the admin route decides before it enqueues (bad input answers 4xx at once, nothing changes):
 * a key whose create is already included answers its stored result; a key with a live commitment
 * is resumed by the job as it stands (its money was checked when it was signed); a new create runs
 * every pre-check now — the job runs them again before it signs.
 */
export async function precheckCreate(
  ctx: ControllerContext,
  req: CreateEscrowRequest,
): Promise<{ stored?: CreateEscrowResponse }> {
  const businessKey = businessKeyOfRequest(req);
  const live = await liveCommitment(ctx.sql, businessKey);
  if (live) {
    if (!sameRequest((live.result?.request ?? null) as RequestFingerprint | null, fingerprintOf(req)))
      throw idempotencyConflict();
    const stored = live.result?.response as CreateEscrowResponse | undefined;
    return live.status === 'included' && stored ? { stored } : {};
  }
  // A candidate tx is signed only to learn its fee; it is neither stored nor sent (an unordered tx
  // uses no account sequence).
  await readFromNode('the chain parameters for the create pre-checks', () => checkAndPrepare(ctx, req));
  return {};
}

/** The live commitment's hash of a create (the 202 answer names it), if one is recorded yet. */
export async function createTxHash(ctx: ControllerContext, requestKey: string): Promise<string | null> {
  return (await liveCommitment(ctx.sql, businessKeyOf(requestKey)))?.txHash ?? null;
}

export async function createEscrow(
  ctx: ControllerContext,
  req: CreateEscrowRequest,
): Promise<CreateEscrowResponse> {
  const fingerprint = fingerprintOf(req);
  const target = targetOf(req);
  return runCommittedTx<CreateEscrowResponse>(ctx, {
    kind: 'create_escrow',
    businessKey: businessKeyOfRequest(req),
    // registerIncluded records the inclusion with the escrow id, after registering it.
    onIncludedRecords: true,
    onLive: async (live) => {
      if (!sameRequest((live.result?.request ?? null) as RequestFingerprint | null, fingerprint))
        throw idempotencyConflict();
      const stored = live.result?.response as CreateEscrowResponse | undefined;
      return live.status === 'included' && stored ? { done: stored } : undefined;
    },
    prepare: async () => ({
      tx: await checkAndPrepare(ctx, req),
      // The key source (an env name, or the key sealed under GATEWAY_ENCRYPTION_KEY) is kept so the
      // reconcile pass can register an included create whose request never came back (a crash).
      result: { request: fingerprint, key_source: storeKeySource(req.keySource) },
    }),
    onIncluded: async (txHash, outcome) => {
      if (outcome) return registerIncluded(ctx, target, outcome);
      // Included, but the process stopped before the answer was stored: read the events again.
      const lookup = await lookupTx(ctx.chain, txHash);
      if (lookup.kind !== 'found') {
        throw new GatewayError(
          'chain_error',
          `cannot read included create tx ${txHash} back from the chain; retry`,
        );
      }
      return finish(ctx, target, lookup.outcome);
    },
    onFailed: (outcome) => finish(ctx, target, outcome),
    onUnknown: (outcome) => finish(ctx, target, outcome),
    onUnreachable: async (txHash, reason) => {
      throw new GatewayError(
        'chain_error',
        `cannot reach the chain to reconcile create tx ${txHash} (${reason}); retry with the same Idempotency-Key`,
      );
    },
  });
}

/** The pre-checks, each naming its field, and the signed tx they were checked for. */
async function checkAndPrepare(ctx: ControllerContext, req: CreateEscrowRequest): Promise<PreparedTx> {
  const [chainId, params, models] = await Promise.all([
    queryChainId(ctx.chain),
    queryInferenceParams(ctx.chain),
    queryGovernanceModels(ctx.chain),
  ]);
  if (req.chainId !== chainId) {
    throw new GatewayError(
      'invalid_request',
      `chain_id ${req.chainId} does not match the chain's id ${chainId}`,
      {
        param: 'chain_id',
      },
    );
  }
  if (!models.some((m) => m.id === req.modelId)) {
    throw new GatewayError(
      'invalid_request',
      `model_id ${req.modelId} is not a governance model on this chain`,
      {
        param: 'model_id',
      },
    );
  }
  const ep = params.devshardEscrow;
  // An escrow no runtime of this gateway can serve would lock the deposit for nothing: refused
  // before anything is signed (devshard-protocol.md §1, §12 #2).
  const unsupported = unsupportedProtocolReason(ep.approvedVersions);
  if (unsupported) throw new GatewayError('unsupported_protocol_version', unsupported);
  const creator = req.key.address;
  if (ep.allowedCreatorAddresses.length > 0 && !ep.allowedCreatorAddresses.includes(creator)) {
    throw new GatewayError(
      'forbidden',
      `creator ${creator} is not on the chain's allowed_creator_addresses; only governance can add it (spec §1.8)`,
      { param: 'sealed' in req.keySource ? 'private_key' : 'private_key_env' },
    );
  }
  if (req.amount < ep.minAmount) {
    throw new GatewayError(
      'invalid_request',
      `amount ${req.amount} is below the chain's min_amount ${ep.minAmount}`,
      {
        param: 'amount',
      },
    );
  }
  if (ep.maxAmount > 0n && req.amount > ep.maxAmount) {
    throw new GatewayError(
      'invalid_request',
      `amount ${req.amount} is above the chain's max_amount ${ep.maxAmount}`,
      {
        param: 'amount',
      },
    );
  }
  const signer = await ctx.signerFor(req.key, chainId).catch((err: unknown) => {
    throw new GatewayError('invalid_request', `creator ${creator}: ${(err as Error).message}`, {
      param: 'sealed' in req.keySource ? 'private_key' : 'private_key_env',
    });
  });
  const tx = signer.prepareCreateEscrow({ amount: req.amount, modelId: req.modelId }, params.fee);
  const spendable = await querySpendableBalance(ctx.chain, creator);
  if (spendable < req.amount + tx.fee.amount) {
    throw new GatewayError(
      'invalid_request',
      `creator ${creator} can spend ${spendable} ngonka, less than the deposit ${req.amount} + fee ${tx.fee.amount}`,
      { param: 'amount' },
    );
  }
  return tx;
}

/**
 * The reconcile pass found an included create nobody finished (the controller died between
 * broadcast and result, or the request gave up): register it as its request asked, and store the
 * answer a retry with the same Idempotency-Key returns. Idempotent, under the create's lock.
 */
export async function finishReconciledCreate(ctx: ControllerContext, txHash: string): Promise<boolean> {
  const [row] = await ctx.sql<{ business_key: string }[]>`
    select business_key from chain_tx_commitments where tx_hash = ${txHash.toUpperCase()} and kind = 'create_escrow'`;
  if (!row) return false;
  return withBusinessLock(ctx.sql, row.business_key, async () => {
    const live = await liveCommitment(ctx.sql, row.business_key);
    if (!live || live.txHash !== txHash.toUpperCase() || live.status !== 'included' || live.result?.response)
      return false;
    const request = live.result?.request as RequestFingerprint | undefined;
    const keySource = live.result?.key_source as StoredKeySource | undefined;
    // A commitment from before key sources were stored waits for its request's retry.
    if (!request || !keySource) return false;
    const lookup = await lookupTx(ctx.chain, live.txHash);
    if (lookup.kind !== 'found' || lookup.outcome.status !== 'included') return false;
    await registerIncluded(
      ctx,
      {
        register: request.register,
        chainId: request.chain_id,
        keySource: loadKeySource(keySource),
        creator: request.creator,
      },
      lookup.outcome,
    );
    return true;
  });
}

async function finish(
  ctx: ControllerContext,
  req: RegisterTarget,
  outcome: TxOutcome,
): Promise<CreateEscrowResponse> {
  if (outcome.status === 'failed') {
    throw new FinalCreateError(
      'chain_error',
      `create tx ${outcome.txHash} failed on chain (${outcome.stage}, code ${outcome.code} ${outcome.codespace}): ${outcome.rawLog}`,
    );
  }
  if (outcome.status === 'unknown') {
    throw new FinalCreateError(
      'upstream_timeout',
      `create tx ${outcome.txHash} was sent but its outcome is not known yet (${outcome.reason}); retry with the same Idempotency-Key to reconcile it — a retry never sends a second escrow`,
    );
  }
  return registerIncluded(ctx, req, outcome);
}

async function registerIncluded(
  ctx: ControllerContext,
  req: RegisterTarget,
  outcome: TxIncluded,
): Promise<CreateEscrowResponse> {
  const [created] = findEscrowCreatedEvents(outcome.events);
  if (!created) {
    await recordOutcome(ctx.sql, outcome);
    throw new FinalCreateError(
      'chain_error',
      `create tx ${outcome.txHash} was included without a devshard_escrow_created event`,
    );
  }
  if (req.register) {
    await registerEscrow(ctx, {
      escrowId: created.escrowId,
      chainId: req.chainId,
      keySource: req.keySource,
      creator: req.creator,
      active: true,
    });
  }
  const response: CreateEscrowResponse = {
    escrow_id: Number(created.escrowId),
    tx_hash: outcome.txHash,
    creator: created.creator || req.creator,
    registered: req.register,
  };
  await recordOutcome(ctx.sql, outcome, { escrowId: created.escrowId });
  await mergeResult(ctx.sql, outcome.txHash, { response });
  ctx.logger.info({ escrowId: created.escrowId.toString(), txHash: outcome.txHash }, 'escrow created');
  return response;
}
