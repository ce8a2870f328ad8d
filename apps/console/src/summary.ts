// GET /v1/admin/summary for the pages that show it, and the traffic history its reads build: kept
// for the whole tab (not per page), so the Overview chart already has points when it is opened. The
// funds history is the controller's (rebuilt from Postgres and the chain on each read), not the tab's.
import { get } from './api.js';

export interface Summary {
  generated_at: string;
  chain_id: string | null;
  funds: {
    model_id: string;
    escrows: number;
    serving: number;
    locked: string;
    balance: string;
    spent: string;
    fees: string;
    returned: string;
  }[];
  settlements: { escrow_id: number; spent: string; fees: string; returned: string }[];
  /** Per model, the running totals at each registration and settle, and at the read. */
  funds_history: {
    model_id: string;
    points: { at: string; locked: string; spent: string; fees: string; returned: string }[];
  }[];
  traffic: {
    replicas: {
      replica_id: string;
      url: string;
      ok: boolean;
      error: string | null;
      requests_total?: number;
      errors_total?: number;
      in_flight?: number;
      requests_per_s?: number | null;
      errors_per_s?: number | null;
    }[];
    window_s: number | null;
    requests_per_s: number;
    errors_per_s: number;
    in_flight: number;
    latency_over: 'window' | 'since_start';
    upstream_p50_ms: number | null;
    upstream_p99_ms: number | null;
    first_token_p50_ms: number | null;
    first_token_p99_ms: number | null;
  };
  burn: { escrow_id: number; balance: string; burn_per_s: number; seconds_to_depletion: number | null }[];
}

/** Points kept for the traffic chart: ten minutes at the polling period. */
const HISTORY = 200;

export const trafficHistory = {
  t: [] as number[],
  requests: [] as (number | null)[],
  errors: [] as (number | null)[],
};

export async function loadSummary(): Promise<Summary> {
  const s = await get<Summary>('/v1/admin/summary');
  const h = trafficHistory;
  const t = Date.parse(s.generated_at) / 1000;
  // The controller's first read has no window to take a rate over yet.
  if (s.traffic.window_s !== null && (h.t.at(-1) ?? 0) < t) {
    h.t.push(t);
    h.requests.push(s.traffic.requests_per_s);
    h.errors.push(s.traffic.errors_per_s);
    for (const list of [h.t, h.requests, h.errors]) if (list.length > HISTORY) list.shift();
  }
  return s;
}
