// Finalize of one escrow (architecture §2.6, §3; spec §3.1 "active → finalized"): mark it
// `draining` (Postgres, then the pool entry, so proxies stop routing at once); its owner sees on its
// next claim pass that the escrow is no longer active, drains its session (in-flight requests with
// their receipt/meta tails and store writes) and releases the lease; the controller then takes the
// lease, opens the session from Postgres (a fresh fencing token: a late write of the old owner is
// refused), runs the finalize rounds, stores the document (Postgres and a copy under
// DEVSHARD_STORAGE_DIR/finalize/) and moves the escrow to `finalized`. Every step is idempotent: a
// stored document is returned as it is, and a retry resumes from the state it finds.
//
// Forced (a settle with `force`): the cut order goes to Redis before the drain (shared
// escrow-cut.ts), so the owner cuts its in-flight requests instead of letting them finish and hands
// the escrow over at once; the finalize then bills every inference that still has neither a Finish
// nor a timeout at its reservation (devshard-protocol.md §5.6 drain; the session's billUnresolved)
// instead of answering `completion_pending`. A standing cut order forces a finalize already running.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PrivateKey } from '@gonka-gateway/chain';
import type { FinalizeResult } from '@gonka-gateway/devshard';
import { HttpHostTransport, isSessionError, systemClock, UserSession } from '@gonka-gateway/devshard/session';
import { creatorKeyOf, EscrowLease } from '@gonka-gateway/escrow-runtime';
import { escrowCutOrder, escrowTable, GatewayError, orderEscrowCut } from '@gonka-gateway/shared';
import { inferenceParamsOrLastKnown } from '../chain/last-known.js';
import type { ControllerContext } from '../controller-context.js';
import { inFlightCount, publishPoolStatus } from './pool-status.js';
import { type TransitionResult, transition } from './transitions.js';

/**
 * The creator key that signs the escrow's diffs when the controller opens its session: the one
 * resolver the owners use too (escrow-runtime creator-key.ts: the sealed key first, then the env
 * variable the row names, then DEVSHARD_PRIVATE_KEY). Errors name the source, never the value.
 */
async function sessionKeyOf(ctx: ControllerContext, escrowId: bigint): Promise<PrivateKey> {
  const source = await escrowTable.creatorKeySourceOf(ctx.sql, escrowId);
  if (!source)
    throw new GatewayError('escrow_not_found', `escrow ${escrowId} is not registered`, { param: 'id' });
  try {
    return creatorKeyOf(`escrow ${escrowId}`, source, ctx.env, { encryptionKey: ctx.encryptionKey });
  } catch (err) {
    const message = (err as Error).message;
    throw new GatewayError(
      'service_unavailable',
      message.startsWith(`escrow ${escrowId}`) ? message : `escrow ${escrowId}: ${message}`,
    );
  }
}

/** Longer than the slowest session open (replay is synchronous; escrow-runtime README). */
const CONTROLLER_LEASE_TTL_MS = 30_000;
const RELEASE_POLL_MS = 100;

/** The stored finalize document text (exact integers), if finalize already ran. */
export async function storedFinalizeDocument(
  ctx: ControllerContext,
  escrowId: bigint,
): Promise<string | undefined> {
  const [row] = await ctx.sql<{ document: string | null }[]>`
    select coalesce(h.finalize_document, f.document::text) as document
      from session_heads h left join finalize_documents f on f.escrow_id = h.escrow_id
     where h.escrow_id = ${escrowId.toString()}::numeric`;
  return row?.document ?? undefined;
}

export interface FinalizeOptions {
  /** Cut in-flight requests instead of waiting for them, and bill what stays unresolved (above). */
  force?: boolean;
}

export async function finalizeEscrow(
  ctx: ControllerContext,
  escrowId: bigint,
  options: FinalizeOptions = {},
): Promise<string> {
  const row = await escrowTable.findEscrow(ctx.sql, escrowId);
  if (!row)
    throw new GatewayError('escrow_not_found', `escrow ${escrowId} is not registered`, { param: 'id' });
  if (row.state === 'finalized' || row.state === 'settling' || row.state === 'settled') {
    const stored = await storedFinalizeDocument(ctx, escrowId);
    if (stored) return stored;
    throw new GatewayError(
      'internal_error',
      `escrow ${escrowId} is ${row.state} but has no stored finalize document`,
    );
  }
  if (options.force && (row.state === 'active' || row.state === 'draining')) {
    // Before the drain is published: the owner reads the order while it drains.
    await orderEscrowCut(ctx.redis, ctx.keys, escrowId);
    ctx.logger.warn(
      {
        marker: 'escrow_settle_forced',
        escrowId: escrowId.toString(),
        inFlight: await inFlightCount(ctx, escrowId),
      },
      'forced settle: in-flight requests are cut and unresolved inferences billed at their reservation',
    );
  }
  if (row.state === 'active') {
    expectMoved(escrowId, await transition(ctx.sql, escrowId, 'drain'));
    ctx.logger.info({ escrowId: escrowId.toString() }, 'finalize: escrow marked draining');
  }
  await publishPoolStatus(ctx, escrowId, 'draining');
  await waitForRelease(ctx, escrowId);
  expectMoved(escrowId, await transition(ctx.sql, escrowId, 'finalize'));

  const lease = await EscrowLease.acquire({
    redis: ctx.redis,
    keys: ctx.keys,
    escrowId,
    replicaId: ctx.controllerId,
    ttlMs: CONTROLLER_LEASE_TTL_MS,
  });
  if (!lease) {
    throw new GatewayError(
      'conflict',
      `escrow ${escrowId} was taken by another process while finalizing; retry`,
      {
        param: 'id',
      },
    );
  }
  try {
    const billUnresolved =
      options.force === true || (await escrowCutOrder(ctx.redis, ctx.keys, escrowId)) !== null;
    const fin = await runSessionFinalize(ctx, escrowId, lease, billUnresolved);
    await storeDocument(ctx, escrowId, fin);
    await transition(ctx.sql, escrowId, 'finalized');
    await ctx.redis.publish(ctx.keys.poolChanges, escrowId.toString());
    ctx.logger.info(
      { escrowId: escrowId.toString(), nonce: fin.document.nonce.toString() },
      'escrow finalized',
    );
    return (await storedFinalizeDocument(ctx, escrowId)) ?? fin.json;
  } finally {
    await lease.release();
  }
}

/** A transition another process made first is fine; one the state forbids ends the call. */
function expectMoved(escrowId: bigint, result: TransitionResult): void {
  if (result.kind === 'refused') {
    throw new GatewayError(
      'conflict',
      `escrow ${escrowId} is ${result.state}; it cannot be finalized from there`,
      {
        param: 'id',
      },
    );
  }
  if (result.kind === 'missing') {
    throw new GatewayError('escrow_not_found', `escrow ${escrowId} is not registered`, { param: 'id' });
  }
}

/** Waits (bounded) for the owner to hand the lease back; never a hanging request. */
async function waitForRelease(ctx: ControllerContext, escrowId: bigint): Promise<void> {
  const key = ctx.keys.escrowLease(escrowId);
  const deadline = Date.now() + ctx.drainWaitMs;
  for (;;) {
    const holder = await ctx.redis.get(key);
    if (holder === null) return;
    if (holder.startsWith(`${ctx.controllerId}:`)) return; // our own lease from an interrupted run
    if (Date.now() >= deadline) {
      const inFlight = await inFlightCount(ctx, escrowId);
      throw new GatewayError(
        'conflict',
        `escrow ${escrowId} is draining: its owner still holds it with ${inFlight} request(s) in flight; retry finalize shortly`,
        { param: 'id' },
      );
    }
    await new Promise((r) => setTimeout(r, RELEASE_POLL_MS));
  }
}

async function runSessionFinalize(
  ctx: ControllerContext,
  escrowId: bigint,
  lease: EscrowLease,
  billUnresolved: boolean,
): Promise<FinalizeResult> {
  // Neither read needs the chain or the node to be up: both fall back on their stored copies
  // (last_known_reads, escrow_hosts), so an escrow finalizes while they are unreachable.
  const [signer, params] = await Promise.all([sessionKeyOf(ctx, escrowId), inferenceParamsOrLastKnown(ctx)]);
  // Warm keys are read here too (bounded, never failing the finalize): the finalize rounds accept the
  // hosts' receipts and state signatures from a cold key or a warm key of it (chain-and-network.md
  // §2.6 Settle 5, devshard-protocol.md §5.7); the persisted warmKeysBound cover only bindings a diff
  // already made, not a host's first warm-key signature in the finalize rounds.
  await Promise.all([ctx.hosts.prepareFor(escrowId), ctx.warmKeys.prepareFor(escrowId)]);
  const clock = ctx.sessionClock ?? systemClock;
  const session = await UserSession.open({
    store: ctx.store,
    escrowId,
    signer,
    transport: new HttpHostTransport({ signer, nowSeconds: clock.nowSeconds }),
    resolveHost: ctx.hosts.resolve,
    writeGuard: lease.guard,
    clock,
    maxNonce: params.devshardEscrow.maxNonce,
    isWarmKey: ctx.warmKeys.isWarmKey,
  });
  ctx.hosts.remember(escrowId, session.state.group.slots);
  try {
    await lease.setToken(session.fencingToken);
    // Timeouts that fell due while nobody owned the escrow are resolved before the rounds.
    await session.checkTimeouts();
    return await session.finalize(billUnresolved ? { billUnresolved: true } : {});
  } catch (err) {
    if (isSessionError(err) && String(err.code) === 'completion_pending') {
      // Never bill an unresolved inference (§2.6): the caller retries once its timeout has passed.
      throw new GatewayError('conflict', `completion_pending: ${err.message}`, { param: 'id' });
    }
    throw err;
  } finally {
    await session.close();
    ctx.hosts.forget(escrowId);
  }
}

async function storeDocument(ctx: ControllerContext, escrowId: bigint, fin: FinalizeResult): Promise<void> {
  const { document, payload, json } = fin;
  await ctx.sql`
    insert into finalize_documents (escrow_id, nonce, version, state_root, fees, document)
    values (${escrowId.toString()}, ${document.nonce.toString()}, ${document.version},
            ${Buffer.from(payload.stateRoot)}, ${document.fees.toString()}, ${json}::text::jsonb)
    on conflict (escrow_id) do nothing`;
  const dir = join(ctx.storageDir, 'finalize');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${escrowId}.json`);
  await writeFile(`${file}.tmp`, json);
  await rename(`${file}.tmp`, file);
}
