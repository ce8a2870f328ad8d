// GET /v1/admin/summary for the pages that show it, and the traffic history its reads build: kept
// for the whole tab (not per page), so the Overview chart already has points when it is opened. The
// funds history is the controller's (rebuilt from Postgres and the chain on each read), not the tab's.
import type { AdminSummary } from '@gonka-gateway/controller/admin-api';
import { get } from './api.js';

/** Points kept for the traffic chart: ten minutes at the polling period. */
const HISTORY = 200;

export const trafficHistory = {
  t: [] as number[],
  requests: [] as (number | null)[],
  errors: [] as (number | null)[],
};

export async function loadSummary(): Promise<AdminSummary> {
  const s = await get<AdminSummary>('/v1/admin/summary');
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
