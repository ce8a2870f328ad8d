// POST {inference_url}/devshard/{version}/sessions/{id}/chat/completions (devshard-protocol.md §4.2,
// §4.4): creator only; binds the session on first call; applies the delivered diffs strictly (500 =
// not accepted); answers 200 text/event-stream:
//   data: {"devshard_receipt": {state_sig, state_hash, nonce, receipt?, confirmed_at?}}
//   [executor: model frames — chat.completion.chunk lines (stream) or one chat.completion line]
//   data: {"devshard_meta": {"mempool": [...]}}      (always after a payload; otherwise only if non-empty)
//   data: [DONE]                                     (only when a payload was sent)
// The host faults of host/faults.ts change this answer: `hang-before-headers` writes nothing at all;
// `stall-after-receipt` stops after the receipt; the execution faults change the model frames (and
// `error-event` replaces them with one OpenAI error line and executes nothing).
import { diffFromWire, type InferenceRequestWire, parseJsonLossless } from '@gonka-gateway/devshard';
import { decodeInferenceRequest, encodeMetaEvent, encodeReceiptEvent } from '@gonka-gateway/devshard/host';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decideReceipt, type ExecutionSink, errorEventJson, execute, type ReceiptGrant } from './executor.js';
import {
  ERROR_EVENT_MESSAGE,
  ERROR_EVENT_STATUS,
  EXECUTION_FAULT_MODES,
  type HostFault,
  SLOW_FIRST_TOKEN_MS,
  SLOW_PER_TOKEN_MS,
} from './faults.js';
import {
  authenticate,
  type RouteEnv,
  rawBody,
  resolveEscrow,
  type SessionParams,
  sendError,
} from './route-context.js';
import type { HostSession } from './session.js';
import { SseWriter } from './sse-writer.js';
import { proposeValidations, type ValidatorFault } from './validator.js';

type Decoded =
  | { readonly req: InferenceRequestWire }
  | { readonly status: number; readonly message: string; readonly devshardError?: string };

/**
 * Plain JSON InferenceRequest only (§3.4): the protobuf envelope (a body whose first non-space byte
 * is not `{`) is answered 503 `not_implemented`, which the spec's minimal gateway never sends; a
 * top-level `message` key is the envelope's JSON form and is refused (400) as on the reference host.
 */
function decodeChatBody(body: Uint8Array): Decoded {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  const first = text.trimStart()[0];
  if (first === undefined) return { status: 400, message: 'empty body' };
  if (first !== '{') {
    return { status: 503, message: 'request envelope not supported', devshardError: 'not_implemented' };
  }
  try {
    // Every other member is base64 or a number, so the key can only occur as a key: parse only then.
    if (text.includes('"message"')) {
      const value = parseJsonLossless(text);
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'message' in value) {
        return { status: 400, message: 'a top-level "message" is not an InferenceRequest' };
      }
    }
    return { req: decodeInferenceRequest(text) };
  } catch (error) {
    return { status: 400, message: `decode request: ${(error as Error).message}` };
  }
}

/** New work the requests_disabled switch blocks (as the reference: payload, Start, Timeout, Validation, Vote). */
function carriesNewWork(session: HostSession | undefined, req: InferenceRequestWire): boolean {
  if (req.payload) return true;
  const latest = session?.latestNonce ?? 0n;
  return req.diffs.some((w) => {
    if (w.nonce <= latest) return false;
    try {
      return diffFromWire(w).txs.some((t) =>
        ['startInference', 'timeoutInference', 'validation', 'validationVote'].includes(t.tx.kind),
      );
    } catch {
      return false; // undecodable: the apply step answers it
    }
  });
}

/**
 * The `hang-before-headers` fault: the request was read, but neither a status line nor a header is
 * ever written; the handler returns once the connection closes — the client left, or the server
 * closed it (the devnet's apps force-close their connections on close, http.ts) — so nothing waits
 * beyond the connection's life.
 */
async function hangUntilClosed(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.hijack();
  const socket = request.raw.socket;
  if (socket.destroyed) return;
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
}

/** The sink of a fresh execution under `fault` (one of EXECUTION_FAULT_MODES other than `error-event`). */
function executionSink(sse: SseWriter, fault: HostFault | null): ExecutionSink {
  switch (fault?.mode) {
    case 'cut-stream':
      return { sse, cutAfterFrames: fault.cutAfterFrames ?? 2 };
    case 'bad-output':
      return { sse, output: 'bad' };
    case 'error-body':
      return { sse, output: 'error' };
    case 'empty-after-receipt':
      return { sse, output: 'empty' };
    case 'tampered-finish':
      return { sse, tamperFinish: true };
    case 'slow':
      return {
        sse,
        slow: {
          firstTokenMs: fault.firstTokenMs ?? SLOW_FIRST_TOKEN_MS,
          perTokenMs: fault.perTokenMs ?? SLOW_PER_TOKEN_MS,
        },
      };
    default:
      return { sse };
  }
}

export function registerChatRoute(app: FastifyInstance, env: RouteEnv): void {
  const { core, host, store } = env;
  app.post<{ Params: SessionParams }>(
    '/devshard/:version/sessions/:id/chat/completions',
    async (request, reply) => {
      const row = resolveEscrow(env, request, reply);
      if (!row) return reply;
      const version = request.params.version;
      const found = store.find(row.id, version);
      if (found && 'status' in found) return sendError(reply, found.status, found.message);
      const body = rawBody(request);
      const signer = authenticate(env, request, reply, body);
      if (signer === null) return reply;
      if (signer !== row.creator) return sendError(reply, 403, 'restricted to escrow owner');
      const decoded = decodeChatBody(body);
      if ('status' in decoded)
        return sendError(reply, decoded.status, decoded.message, decoded.devshardError);
      const { req } = decoded;
      if (req.payload && core.faults.takeHostFault(host.address, ['hang-before-headers'])) {
        await hangUntilClosed(request, reply); // nothing applied, nothing written
        return reply;
      }
      const params = core.chain.effectiveParams().devshardEscrow;
      if (!params.devshardRequestsEnabled && carriesNewWork(found?.session, req)) {
        return sendError(reply, 503, 'requests disabled', 'requests_disabled');
      }
      const bound = found ?? store.bind(row, version, params);
      if ('status' in bound) return sendError(reply, bound.status, bound.message, bound.devshardError);
      const session = bound.session;
      const delivery = session.deliver(req.diffs, store.applyContext, BigInt(params.maxNonce));
      if (delivery.error) return sendError(reply, 500, delivery.error.message);
      proposeValidations(session, store, core.model, validatorFault(host.address));
      const sse = new SseWriter(reply);
      try {
        await respond(session, req, sse);
      } catch (error) {
        // The status line is gone already: a broken stream is the only honest answer left.
        request.log.error(error);
        await sse.cut();
      }
      return reply;
    },
  );

  /** `false-invalid` / `no-validations` (validator.ts); they do not count uses. */
  function validatorFault(address: string): ValidatorFault {
    const mode = core.faults.hostFault(address)?.mode;
    return mode === 'false-invalid' || mode === 'no-validations' ? mode : undefined;
  }

  async function respond(session: HostSession, req: InferenceRequestWire, sse: SseWriter): Promise<void> {
    const { faults } = core;
    const key = store.signer;
    let grant: ReceiptGrant | undefined;
    // §10 item 3: a receipt only for the diff of this request, delivered in it.
    if (req.payload && req.diffs.some((d) => d.nonce === req.nonce)) {
      const decision = decideReceipt(
        session,
        store,
        req.nonce,
        req.payload,
        req.stream === true,
        core.devshardHosts.clock.nowSeconds(),
        () => faults.takeHostFault(host.address, ['refuse']) !== null,
      );
      if (!('refused' in decision)) grant = decision;
    }
    const nonce = session.latestNonce;
    const wrongRoot = faults.takeHostFault(host.address, ['wrong-state-sig']) !== null;
    sse.data(
      encodeReceiptEvent({
        nonce,
        stateHash: session.rootAt(nonce)!,
        stateSig: session.stateSignature(nonce, key, wrongRoot)!,
        ...(grant ? { receipt: grant.receipt, confirmedAt: grant.confirmedAt } : {}),
      }),
    );
    if (faults.takeHostFault(host.address, ['stall-after-receipt'])) {
      await sse.closed(); // never executes, never finishes: the stream ends when the client leaves
      return;
    }
    if (grant) {
      const execution = session.executions.get(grant.start.inferenceId);
      if (execution === undefined) {
        const fault = faults.takeHostFault(host.address, EXECUTION_FAULT_MODES);
        if (fault?.mode === 'error-event') {
          // The model failed before its first token: one error line, no execution, no Finish; the
          // inference stays Started until the execution timeout (§7.4). A retry executes anew.
          const status = fault.status ?? ERROR_EVENT_STATUS;
          sse.data(errorEventJson(status, fault.message ?? ERROR_EVENT_MESSAGE));
        } else {
          await execute(session, store, core.model, grant, executionSink(sse, fault));
        }
      } else if (execution.phase === 'done') {
        sse.raw(execution.served); // a retry after a lost response: the same bytes again
      }
      // 'running': another request is executing it; its Finish arrives through the mempool.
    }
    const mempool = session.mempool.txs().map((t) => t.bytes);
    const meta = req.payload || mempool.length > 0 ? [encodeMetaEvent({ mempool })] : [];
    sse.end(meta, req.payload !== undefined);
  }
}
