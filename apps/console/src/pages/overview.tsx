// Overview: the funds in escrows per model, now and over time, and the proxies' traffic, all from
// GET /v1/admin/summary (the controller reads the proxies' own /metrics: no Prometheus needed, and
// rebuilds the funds history from the escrows' rows and settle events: no history kept in the tab).
import type { ModelFundsHistory } from '@gonka-gateway/controller/admin-api';
import { useState } from 'preact/hooks';
import { gnk, num } from '../format.js';
import { loadSummary, trafficHistory } from '../summary.js';
import { Card, Chart, ErrorLine, usePoll } from '../ui.js';

/** ngonka (decimal string) as a GNK float: exact enough to draw, never used for a total. */
const gnkNumber = (ngonka: string) => Number(BigInt(ngonka)) / 1e9;

// Spending is often a tiny share of the deposits: on the deposits' axis it would lie flat on zero,
// so spent and fees get their own axis on the right.
const FUNDS_SERIES = [
  { field: 'locked', label: 'locked GNK', color: '#2563eb', scale: undefined },
  { field: 'returned', label: 'returned GNK', color: '#16a34a', scale: undefined },
  { field: 'spent', label: 'spent GNK (right axis)', color: '#d97706', scale: 'spent' },
  { field: 'fees', label: 'fees GNK (right axis)', color: '#7c3aed', scale: 'spent' },
] as const;

/** One model's funds over time: a step chart, with a selector when there are several models. */
function FundsHistory({ history }: { history: ModelFundsHistory[] }) {
  const [chosen, setChosen] = useState<string | null>(null);
  const model = history.find((m) => m.model_id === chosen) ?? history[0];
  return (
    <>
      <div class="toolbar">
        <h2>Funds over time</h2>
        {history.length > 1 && (
          <select
            name="funds-model"
            aria-label="Model"
            value={model?.model_id}
            onChange={(e) => setChosen(e.currentTarget.value)}
          >
            {history.map((m) => (
              <option key={m.model_id} value={m.model_id}>
                {m.model_id}
              </option>
            ))}
          </select>
        )}
        {history.length === 1 && <span class="hint">{model?.model_id}</span>}
      </div>
      {!model ? (
        <p class="hint">No escrows registered.</p>
      ) : (
        <div data-testid="funds-history" data-model={model.model_id} data-points={model.points.length}>
          <Chart
            x={model.points.map((p) => Date.parse(p.at) / 1000)}
            series={FUNDS_SERIES.map((s) => ({
              label: s.label,
              color: s.color,
              ...(s.scale ? { scale: s.scale } : {}),
              values: model.points.map((p) => gnkNumber(p[s.field])),
            }))}
            height={220}
            steps
          />
          <p class="hint">
            A step at each escrow's registration (locked) and settle (spent, fees and returned, from its
            settle event); the last point adds what live escrows spent so far.
          </p>
        </div>
      )}
    </>
  );
}

export function OverviewPage() {
  const { data, error } = usePoll(loadSummary);
  if (!data) return <ErrorLine error={error ?? null} />;
  const t = data.traffic;
  const total = (field: 'locked' | 'spent' | 'returned' | 'fees' | 'balance') =>
    data.funds.reduce((sum, m) => sum + BigInt(m[field]), 0n);
  const h = trafficHistory;
  return (
    <>
      <ErrorLine error={error} />
      <section class="cards">
        <Card
          title="Locked in escrows"
          value={gnk(total('locked'))}
          hint="Deposits of every unsettled escrow"
        />
        <Card title="Balance left" value={gnk(total('balance'))} />
        <Card title="Spent" value={gnk(total('spent'))} />
        <Card title="Fees" value={gnk(total('fees'))} />
        <Card title="Returned" value={gnk(total('returned'))} hint="Remainders paid back by settles" />
      </section>
      <section class="cards">
        <Card title="Requests/s" value={num(t.requests_per_s, 2)} />
        <Card title="Errors/s" value={num(t.errors_per_s, 2)} />
        <Card title="In flight" value={num(t.in_flight, 0)} />
        <Card
          title={`Host call p50 / p99${t.latency_over === 'since_start' ? ' (since start)' : ''}`}
          value={`${num(t.upstream_p50_ms, 0)} / ${num(t.upstream_p99_ms, 0)} ms`}
        />
        <Card
          title={`First token p50 / p99${t.latency_over === 'since_start' ? ' (since start)' : ''}`}
          value={`${num(t.first_token_p50_ms, 0)} / ${num(t.first_token_p99_ms, 0)} ms`}
        />
      </section>
      <h2>Traffic</h2>
      {h.t.length < 2 ? (
        <p class="hint">Collecting: the chart starts after two reads of the proxies’ metrics.</p>
      ) : (
        <Chart
          x={h.t}
          series={[
            { label: 'requests/s', values: h.requests, color: '#2563eb' },
            { label: 'errors/s', values: h.errors, color: '#dc2626' },
          ]}
          height={180}
        />
      )}
      <FundsHistory history={data.funds_history ?? []} />
      <h2>Funds per model</h2>
      <table>
        <thead>
          <tr>
            <th>Model</th>
            <th>Escrows</th>
            <th>Serving</th>
            <th>Locked</th>
            <th>Balance</th>
            <th>Spent</th>
            <th>Fees</th>
            <th>Returned</th>
          </tr>
        </thead>
        <tbody>
          {data.funds.map((m) => (
            <tr key={m.model_id}>
              <td>{m.model_id}</td>
              <td>{m.escrows}</td>
              <td>{m.serving}</td>
              <td title={`${m.locked} ngonka`}>{gnk(m.locked)}</td>
              <td title={`${m.balance} ngonka`}>{gnk(m.balance)}</td>
              <td title={`${m.spent} ngonka`}>{gnk(m.spent)}</td>
              <td title={`${m.fees} ngonka`}>{gnk(m.fees)}</td>
              <td title={`${m.returned} ngonka`}>{gnk(m.returned)}</td>
            </tr>
          ))}
          {data.funds.length === 0 && (
            <tr>
              <td colSpan={8}>No escrows registered.</td>
            </tr>
          )}
        </tbody>
      </table>
      <h2>Proxy replicas</h2>
      <table>
        <thead>
          <tr>
            <th>Replica</th>
            <th>URL</th>
            <th>Metrics</th>
            <th>Requests</th>
            <th>Errors</th>
            <th>Requests/s</th>
            <th>In flight</th>
          </tr>
        </thead>
        <tbody>
          {t.replicas.map((r) => (
            <tr key={r.replica_id}>
              <td>{r.replica_id}</td>
              <td>{r.url}</td>
              <td>{r.ok ? 'ok' : <span class="error">{r.error}</span>}</td>
              <td>{num(r.requests_total, 0)}</td>
              <td>{num(r.errors_total, 0)}</td>
              <td>{num(r.requests_per_s, 2)}</td>
              <td>{num(r.in_flight, 0)}</td>
            </tr>
          ))}
          {t.replicas.length === 0 && (
            <tr>
              <td colSpan={7}>No live proxy replica.</td>
            </tr>
          )}
        </tbody>
      </table>
    </>
  );
}
