// The Grafana dashboard and the Prometheus alerts use only metrics the proxy and controller register
// (names read from the code), and the dashboard shows request rate and errors, added latency, TTFT,
// escrow balances and nonces, and leases.
import { describe, expect, it } from 'vitest';
import { gatewayMetricsIn, readDeployFile, readYaml, registeredMetricNames } from './deploy-files.js';

const registered = registeredMetricNames();
const dashboard = JSON.parse(readDeployFile('grafana/dashboards/gateway.json'));
const panels = dashboard.panels as {
  id: number;
  type: string;
  title: string;
  targets?: { expr: string; datasource: { uid: string } }[];
}[];
const dashboardExprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
const alertRules = readYaml('prometheus/alerts.yml').groups.flatMap((g: { rules: object[] }) => g.rules) as {
  alert: string;
  expr: string;
}[];

describe('monitoring files', () => {
  it('the code registers the metrics the checks rely on', () => {
    for (const name of [
      'devshard_gateway_requests_total',
      'devshard_gateway_added_latency_ms_bucket',
      'devshard_gateway_process_cpu_seconds_total',
    ]) {
      expect(registered.has(name), name).toBe(true);
    }
  });

  it('the dashboard and the alerts name only registered metrics', () => {
    for (const expr of [...dashboardExprs, ...alertRules.map((r) => r.expr)]) {
      for (const name of gatewayMetricsIn(expr))
        expect(registered.has(name), `${name} in ${expr}`).toBe(true);
    }
  });

  it('the dashboard covers request rate and errors, added latency, TTFT, escrow balances and nonces, leases', () => {
    const used = new Set(dashboardExprs.flatMap(gatewayMetricsIn));
    for (const name of [
      'devshard_gateway_requests_total',
      'devshard_gateway_added_latency_ms_bucket',
      'devshard_gateway_time_to_first_token_ms_bucket',
      'devshard_gateway_escrow_balance_ngonka',
      'devshard_gateway_escrow_nonce',
      'devshard_gateway_leases_held',
    ]) {
      expect(used.has(name), name).toBe(true);
    }
    for (const p of panels.filter((p) => p.type !== 'row')) {
      expect(
        p.targets!.every((t) => t.datasource.uid === 'prometheus'),
        p.title,
      ).toBe(true);
    }
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
  });

  it('every alert has a name, an expression, a severity and a summary', () => {
    expect(alertRules.length).toBeGreaterThan(5);
    for (const rule of alertRules as {
      alert: string;
      expr: string;
      labels: { severity: string };
      annotations: { summary: string };
    }[]) {
      expect(rule.alert).toMatch(/^Gateway[A-Za-z]+$/);
      expect(['critical', 'warning']).toContain(rule.labels.severity);
      expect(rule.annotations.summary.length).toBeGreaterThan(0);
    }
  });
});
