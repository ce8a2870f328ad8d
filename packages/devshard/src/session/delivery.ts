// Getting diffs to hosts (devshard-protocol.md §7.1 step 5, §7.3): every send carries each diff the
// host lacks (nonce > host_sync_nonce), including the new one; a gap longer than one chunk is first
// closed by catch-up sends without payload, at most 200 diffs each, skipping ahead when a response
// shows the host further. Catch-up to one host is serialized; sends to different hosts run in parallel.
// Diffs older than the in-memory window (diff-log.ts) are read back from the store, one chunk at a time.
import { diffToWire, type InferenceRequestWire, type PayloadWire } from '../json/wire.js';
import { type InferenceRecord, InferenceStatus } from '../state/types.js';
import { HostErrorCode, HostTransportError, isHostTransportError } from '../transport/errors.js';
import type { ChatPurpose, ChatStream, HostTarget } from '../transport/types.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { intakeHostTxs, processReceipt } from './response.js';
import type { SessionContext } from './session-context.js';
import type { StoredDiff } from './store.js';

export interface DeliveryResult {
  readonly ok: boolean;
  readonly error?: Error;
}

/**
 * Diffs `from`…`to` for a send: the part the log holds from memory, anything older from the store.
 * The held part is taken before the store read, so appends meanwhile cannot shift the window under it.
 */
export async function diffsFor(
  ctx: Pick<SessionContext, 'replica' | 'store' | 'escrowId'>,
  from: bigint,
  to: bigint,
): Promise<StoredDiff[]> {
  const held = ctx.replica.log.firstHeld;
  const recent = ctx.replica.log.range(from, to);
  if (from >= held || from > to) return recent;
  const lastOld = to < held ? to : held - 1n;
  const older = await ctx.store.readDiffs(ctx.escrowId, from, lastOld);
  if (older.length !== Number(lastOld - from) + 1 || older[0]?.nonce !== from) {
    throw new Error(`store returned ${older.length} diffs for ${from}…${lastOld}`);
  }
  return [...older, ...recent];
}

function targetOf(ctx: SessionContext, address: string): HostTarget {
  const target = ctx.resolveHost(address);
  if (!target) throw new HostTransportError(HostErrorCode.Network, `no known URL for host ${address}`);
  return target;
}

/** Reads a stream of a send without payload: receipts and mempools are processed, chunks ignored. */
async function drainProtocolStream(ctx: SessionContext, address: string, stream: ChatStream): Promise<void> {
  for await (const event of stream) {
    if (event.type === 'receipt') processReceipt(ctx, address, event.receipt);
    else if (event.type === 'meta') intakeHostTxs(ctx, address, event.meta.mempool);
  }
}

/**
 * Brings `address` to at least `upTo` with chunked catch-up sends. With `resend`, a host already at
 * `upTo` is sent the diff at `upTo` again, which makes it answer with its receipt (and signature) there.
 */
export function catchUp(
  ctx: SessionContext,
  address: string,
  upTo: bigint,
  options: { resend?: boolean } = {},
): Promise<DeliveryResult> {
  return ctx.catchUpLock.run(address, async () => {
    let from = ctx.hosts.of(address) + 1n;
    if (options.resend && from > upTo) from = upTo;
    while (from <= upTo) {
      const to = from + ctx.settings.catchUpChunk - 1n < upTo ? from + ctx.settings.catchUpChunk - 1n : upTo;
      try {
        const diffs = await diffsFor(ctx, from, to);
        const stream = await ctx.transport.chat(
          targetOf(ctx, address),
          ctx.escrowId,
          { diffs: diffs.map((d) => diffToWire(d.diff)), nonce: to },
          { purpose: 'catch-up' },
        );
        await drainProtocolStream(ctx, address, stream);
      } catch (error) {
        ctx.emit({
          type: 'host_error',
          host: address,
          operation: 'catch-up',
          nonce: to,
          error: error as Error,
        });
        return { ok: false, error: error as Error };
      }
      const synced = ctx.hosts.of(address);
      if (synced < to) {
        // A 200 without a receipt at `to` (or a divergence): stop rather than loop.
        return { ok: false, error: new Error(`host ${address} answered catch-up to ${to} at ${synced}`) };
      }
      from = synced + 1n;
    }
    return { ok: true };
  });
}

/**
 * Opens the chat send of nonce `nonce` to `address`: catch-up first when the host lags by more than a
 * chunk, then one request with the remaining diffs (the new one included, §10 item 3).
 */
export async function openChat(
  ctx: SessionContext,
  address: string,
  nonce: bigint,
  options: { payload?: PayloadWire; stream?: boolean; purpose: ChatPurpose; signal?: AbortSignal },
): Promise<ChatStream> {
  const target = targetOf(ctx, address);
  if (nonce - ctx.hosts.of(address) > ctx.settings.catchUpChunk) {
    const caught = await catchUp(ctx, address, nonce - 1n);
    if (!caught.ok) throw caught.error ?? new Error('catch-up failed');
  }
  const request: InferenceRequestWire = {
    diffs: (await diffsFor(ctx, ctx.hosts.of(address) + 1n, nonce)).map((d) => diffToWire(d.diff)),
    nonce,
    ...(options.payload ? { payload: options.payload } : {}),
    ...(options.stream ? { stream: true } : {}),
  };
  return ctx.transport.chat(target, ctx.escrowId, request, {
    purpose: options.purpose,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** Sends diff `nonce` (no payload) to its host, slot nonce mod N, and processes the answer. */
export async function deliverDiff(
  ctx: SessionContext,
  address: string,
  nonce: bigint,
): Promise<DeliveryResult> {
  try {
    const stream = await openChat(ctx, address, nonce, { purpose: 'protocol' });
    await drainProtocolStream(ctx, address, stream);
    return { ok: true };
  } catch (error) {
    ctx.emit({ type: 'host_error', host: address, operation: 'protocol', nonce, error: error as Error });
    if (isHostTransportError(error) && error.code === HostErrorCode.ApplyFailed) {
      await checkRejectedDiff(ctx, nonce, address);
    }
    return { ok: false, error: error as Error };
  }
}

/** Asks `address` for its mempool and queues what may still apply (a Finish lost with a stream). */
export async function readMempool(ctx: SessionContext, address: string): Promise<number> {
  const target = ctx.resolveHost(address);
  if (!target) return 0;
  try {
    const txs = await ctx.transport.getMempool(target, ctx.escrowId);
    return intakeHostTxs(
      ctx,
      address,
      txs.map((t) => t.bytes),
    );
  } catch (error) {
    ctx.emit({ type: 'host_error', host: address, operation: 'mempool', error: error as Error });
    return 0;
  }
}

/**
 * Takeover (architecture §2.5) and the finalize gate (finalize-gate.ts): reads the mempool of the
 * executor of every record in `open` (default: every inference still Pending or Started), once per
 * executor, and queues the Confirm/Finish found, so what a previous owner had received but not yet
 * put in a diff is billed at its real cost. Returns how many txs it queued.
 */
export async function recoverFromMempools(
  ctx: SessionContext,
  open: Iterable<InferenceRecord> = ctx.replica.state.inferences.values(),
): Promise<number> {
  const executors = new Set<string>();
  for (const r of open) {
    if (r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started) {
      executors.add(ctx.replica.state.group.slots[r.executorSlot]!);
    }
  }
  const counts = await Promise.all([...executors].map((address) => readMempool(ctx, address)));
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * Breaker (§10 item 2): `rejectedBy` refused (apply failed) a send ending at `nonce`. Every
 * other host is brought to `nonce`; if none takes it, the diff is one no reachable host accepts and the
 * session faults (`diff_rejected`, or `ownership_lost` when a newer owner explains it). Nothing rolls
 * the signed nonce back. No nonce is composed while this runs.
 */
export async function checkRejectedDiff(
  ctx: SessionContext,
  nonce: bigint,
  rejectedBy: string,
): Promise<void> {
  const accepted = await ctx.guard.pausedFor(async () => {
    const others = [...ctx.replica.state.group.slotsOf.keys()].filter((a) => a !== rejectedBy);
    const results = await Promise.all(
      others.map((a) =>
        ctx.hosts.of(a) >= nonce ? Promise.resolve({ ok: true } as DeliveryResult) : catchUp(ctx, a, nonce),
      ),
    );
    return results.some((r) => r.ok);
  });
  // Undefined: already faulted, or another check is settling the session (ownership.ts).
  if (accepted !== false) return;
  ctx.guard.faultAfterCheck(
    new SessionError(
      SessionErrorCode.DiffRejected,
      `no reachable host accepts the diffs up to nonce ${nonce}`,
    ),
  );
  await ctx.guard.checked();
}
