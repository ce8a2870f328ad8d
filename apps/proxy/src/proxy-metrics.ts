// The proxy's Prometheus metrics (docs/operator-guide.md §8): `devshard_gateway_` prefix, bounded
// labels (route is the route pattern, model comes from the pool's set, status is the HTTP status;
// never a key or id).
import type { SessionEvent } from '@gonka-gateway/devshard/session';
import type { OwnedEscrowInfo } from '@gonka-gateway/escrow-runtime';
import { METRIC_PREFIX, type Registry } from '@gonka-gateway/shared';
import { Counter, Gauge, Histogram } from 'prom-client';

const MS_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

export type ProxyMetrics = ReturnType<typeof createProxyMetrics>;

/** Observations kept before a scrape adds them; a replica nobody scrapes holds at most this many. */
const PENDING_OBSERVATIONS = 1024;

/**
 * A ms histogram whose observations wait in an array and are added at the next scrape: prom-client
 * hashes the label object and searches the buckets on every observe(). `make` builds
 * the Histogram with the given collect hook; each call site spells its `new Histogram({ name })` out,
 * which is how deploy/'s monitoring check finds the registered names.
 */
function deferredObservations(make: (collect: () => void) => Histogram) {
  const pending: number[] = [];
  const flush = () => {
    for (const ms of pending) histogram.observe(ms);
    pending.length = 0;
  };
  const histogram = make(flush);
  return {
    histogram,
    observe(ms: number): void {
      pending.push(ms);
      if (pending.length >= PENDING_OBSERVATIONS) flush();
    },
  };
}

interface RequestLabels {
  readonly route: 'pooled' | 'escrow';
  readonly model: string;
  readonly status: string;
}

/** A participant's serving state per model (serve/host-health.ts), for the per-host series. */
export interface HostView {
  readonly participant: string;
  readonly model: string;
  readonly state: 'healthy' | 'probation' | 'quarantined';
  readonly receiptMs: number | undefined;
  readonly firstTokenMs: number | undefined;
}

const STATE_VALUE = { healthy: 0, probation: 1, quarantined: 2 } as const;

export function createProxyMetrics(
  registry: Registry,
  owned: () => readonly OwnedEscrowInfo[],
  hosts: () => readonly HostView[] = () => [],
) {
  const registers = [registry];
  // Per participant and model of the escrow groups this replica has served: bounded by the groups.
  const hostState = new Gauge({
    name: `${METRIC_PREFIX}host_state`,
    help: 'Serving state of each participant per model: 0 healthy, 1 probation, 2 quarantined.',
    labelNames: ['participant', 'model'] as const,
    registers,
    collect() {
      hostState.reset();
      hostFirstToken.reset();
      hostReceipt.reset();
      for (const h of hosts()) {
        const labels = { participant: h.participant, model: h.model };
        hostState.set(labels, STATE_VALUE[h.state]);
        if (h.firstTokenMs !== undefined) hostFirstToken.set(labels, h.firstTokenMs);
        if (h.receiptMs !== undefined) hostReceipt.set(labels, h.receiptMs);
      }
    },
  });
  const hostFirstToken = new Gauge({
    name: `${METRIC_PREFIX}host_first_token_ms`,
    help: 'Peak-EWMA time from receipt to first content of each participant per model, in ms.',
    labelNames: ['participant', 'model'] as const,
    registers,
  });
  const hostReceipt = new Gauge({
    name: `${METRIC_PREFIX}host_receipt_ms`,
    help: 'Peak-EWMA time from send to receipt of each participant per model, in ms.',
    labelNames: ['participant', 'model'] as const,
    registers,
  });
  // Per escrow this replica owns: bounded by the pool size, never per request.
  const escrowBalance = new Gauge({
    name: `${METRIC_PREFIX}escrow_balance_ngonka`,
    help: 'Session balance of each escrow this replica owns, in ngonka.',
    labelNames: ['escrow_id'] as const,
    registers,
    collect() {
      refreshEscrows();
    },
  });
  const escrowNonce = new Gauge({
    name: `${METRIC_PREFIX}escrow_nonce`,
    help: 'Latest nonce of each escrow this replica owns.',
    labelNames: ['escrow_id'] as const,
    registers,
  });
  const escrowRoutingStop = new Gauge({
    name: `${METRIC_PREFIX}escrow_routing_stop`,
    help: 'Nonce at which each escrow this replica owns leaves routing: max_nonce − (N + 1) − 200, 19,800 while its max_nonce is unknown.',
    labelNames: ['escrow_id'] as const,
    registers,
  });
  const refreshEscrows = () => {
    escrowBalance.reset();
    escrowNonce.reset();
    escrowRoutingStop.reset();
    for (const e of owned()) {
      const escrow_id = e.escrowId.toString();
      if (e.balance !== undefined) escrowBalance.set({ escrow_id }, Number(e.balance));
      if (e.nonce !== undefined) escrowNonce.set({ escrow_id }, Number(e.nonce));
      if (e.routingStop !== undefined) escrowRoutingStop.set({ escrow_id }, Number(e.routingStop));
    }
  };
  // The session's billing guards, fed from OwnedSessions' onSessionEvent. Labels stay
  // bounded (the verdict only); the host and inference of each event are in the session's evidence.
  const servedBytes = new Counter({
    name: `${METRIC_PREFIX}served_bytes_verdicts_total`,
    help: 'Served-bytes checks by verdict (match, mismatch: a Finish hash of bytes never served, truncated).',
    labelNames: ['verdict'] as const,
    registers,
  });
  const dominantHostBlocks = new Counter({
    name: `${METRIC_PREFIX}dominant_host_blocks_total`,
    help: 'Dominant hosts blocked after a refusal or timeout (their nonces are burned fee-only).',
    registers,
  });
  const onSessionEvent = (_escrowId: bigint, event: SessionEvent): void => {
    if (event.type === 'served_bytes') servedBytes.inc({ verdict: event.verdict });
    else if (event.type === 'dominant_host_blocked') dominantHostBlocks.inc();
  };
  // Counted per request in plain numbers and added to the counters when scraped: prom-client
  // sorts, joins and validates the label object on every inc().
  const servedRequests = new Map<string, { labels: RequestLabels; count: number }>();
  let inputTokens = 0;
  let outputTokens = 0;
  let inFlight = 0;
  const requests = new Counter({
    name: `${METRIC_PREFIX}requests_total`,
    help: 'Chat requests by route, model and HTTP status.',
    labelNames: ['route', 'model', 'status'] as const,
    registers,
    collect() {
      for (const entry of servedRequests.values()) {
        if (entry.count === 0) continue;
        this.inc(entry.labels, entry.count);
        entry.count = 0;
      }
    },
  });
  const tokens = new Counter({
    name: `${METRIC_PREFIX}tokens_total`,
    help: 'Tokens by direction (input, output).',
    labelNames: ['direction'] as const,
    registers,
    collect() {
      if (inputTokens > 0) this.inc({ direction: 'input' }, inputTokens);
      if (outputTokens > 0) this.inc({ direction: 'output' }, outputTokens);
      inputTokens = 0;
      outputTokens = 0;
    },
  });
  return {
    hostState,
    hostFirstToken,
    hostReceipt,
    escrowBalance,
    escrowNonce,
    escrowRoutingStop,
    servedBytes,
    dominantHostBlocks,
    onSessionEvent,
    requests,
    tokens,
    /** One answered chat request: requests_total{route, model, status} and its tokens. */
    countRequest(labels: RequestLabels, input: number, output: number): void {
      // Bounded like the labels: routes × the pool's models × HTTP statuses.
      const key = `${labels.route}\n${labels.model}\n${labels.status}`;
      const entry = servedRequests.get(key);
      if (entry) entry.count++;
      else servedRequests.set(key, { labels, count: 1 });
      inputTokens += input;
      outputTokens += output;
    },
    addedLatency: deferredObservations(
      (collect) =>
        new Histogram({
          name: `${METRIC_PREFIX}added_latency_ms`,
          help: 'Total request time minus upstream time, in ms.',
          buckets: MS_BUCKETS,
          registers,
          collect,
        }),
    ),
    upstreamLatency: deferredObservations(
      (collect) =>
        new Histogram({
          name: `${METRIC_PREFIX}upstream_latency_ms`,
          help: 'Time spent in the host call, in ms.',
          buckets: MS_BUCKETS,
          registers,
          collect,
        }),
    ),
    timeToFirstToken: deferredObservations(
      (collect) =>
        new Histogram({
          name: `${METRIC_PREFIX}time_to_first_token_ms`,
          help: 'Time from request to the first chunk sent to the client, in ms.',
          buckets: MS_BUCKETS,
          registers,
          collect,
        }),
    ),
    /** A chat request started (until chatEnded): chat_in_flight, read at each scrape. */
    chatStarted(): void {
      inFlight++;
    },
    chatEnded(): void {
      inFlight--;
    },
    inFlight: new Gauge({
      name: `${METRIC_PREFIX}chat_in_flight`,
      help: 'Chat requests this replica is serving.',
      registers,
      collect() {
        this.set(inFlight);
      },
    }),
    // Each answered chat request is in requests_total once, on the replica that served it (a
    // forwarding replica serves nothing), so the fleet's forwarded share is
    // sum(forwarded_requests_total) / sum(requests_total), the rest served where they landed.
    forwarded: new Counter({
      name: `${METRIC_PREFIX}forwarded_requests_total`,
      help: 'Chat requests forwarded to the owner replica, once each (served there, counted in its requests_total).',
      registers,
    }),
    retries: new Counter({
      name: `${METRIC_PREFIX}retries_total`,
      help: 'Extra attempts of chat requests (hedges after a missed deadline, retries after a failure before content).',
      registers,
    }),
    hedgesRefused: new Counter({
      name: `${METRIC_PREFIX}hedges_refused_total`,
      help: 'Extra attempts not started because the hedge budget was spent.',
      registers,
    }),
    hostFailures: new Counter({
      name: `${METRIC_PREFIX}host_failures_total`,
      help: 'Failed attempts by participant, model and reason (receipt_timeout, first_token_timeout, stall, empty_answer, error_event, cut_stream, throttled, failure).',
      labelNames: ['participant', 'model', 'reason'] as const,
      registers,
    }),
    burnedNonces: new Counter({
      name: `${METRIC_PREFIX}avoided_nonces_total`,
      help: 'Nonces spent fee-only (fee_per_nonce each, no inference) because their executor was quarantined or already tried by the request.',
      labelNames: ['model'] as const,
      registers,
    }),
    hostTransitions: new Counter({
      name: `${METRIC_PREFIX}host_transitions_total`,
      help: 'Host state changes decided by this replica, by the state entered.',
      labelNames: ['state'] as const,
      registers,
    }),
    admissionRejections: new Counter({
      name: `${METRIC_PREFIX}admission_rejections_total`,
      help: 'Requests refused by fleet-wide admission.',
      labelNames: ['reason'] as const,
      registers,
    }),
    /** Refusals of a stored key's own limits; reason is one of KEY_REJECTION_REASONS. */
    keyRejections: new Counter({
      name: `${METRIC_PREFIX}key_rejections_total`,
      help: 'Requests refused by a stored API key limit (reason: expired, model, rpm, tpm, key_concurrency, budget).',
      labelNames: ['reason'] as const,
      registers,
    }),
    leasesHeld: new Gauge({
      name: `${METRIC_PREFIX}leases_held`,
      help: 'Escrow leases this replica holds.',
      registers,
      collect() {
        this.set(owned().length);
      },
    }),
  };
}
