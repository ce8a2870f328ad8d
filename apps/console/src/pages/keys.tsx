// Keys and usage: the API keys with their limits, spend and budget left (GET /v1/admin/keys), create,
// rotate and revoke; a new secret is shown once in a dialog and dropped from memory when it closes —
// the API never returns it again (docs/keys-and-usage.md). Usage by day, key and model from the
// ledger (GET /v1/admin/usage), with the records as CSV.
import type { KeyView, KeyWithSecret, LedgerTotals, UsageTotals } from '@gonka-gateway/controller/admin-api';
import { useState } from 'preact/hooks';
import { get, post, request } from '../api.js';
import { ago, gnk, num } from '../format.js';
import {
  Badge,
  Chart,
  ConfirmDialog,
  type ConfirmRequest,
  ErrorLine,
  errorText,
  Modal,
  usePoll,
} from '../ui.js';

/** The API's prefix of a key, marked as cut (the whole key is never shown after creation). */
const shownPrefix = (k: KeyView) => (k.prefix.endsWith('…') ? k.prefix : `${k.prefix}…`);

function gnkToNgonka(text: string): string | null {
  const t = text.trim();
  if (t === '') return null;
  const m = /^(\d+)(?:\.(\d{0,9}))?$/.exec(t);
  if (!m) throw new Error('the budget must be a number of GNK (up to 9 decimals)');
  return (BigInt(m[1]!) * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0') || '0')).toString();
}

function CreateKey({ close, created }: { close: () => void; created: (key: KeyWithSecret) => void }) {
  const [name, setName] = useState('');
  const [budget, setBudget] = useState('');
  const [period, setPeriod] = useState('total');
  const [rpm, setRpm] = useState('');
  const [models, setModels] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const list = models
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean);
      const body = {
        name: name.trim(),
        budget_ngonka: gnkToNgonka(budget),
        budget_period: period,
        rpm: rpm.trim() === '' ? null : Number(rpm),
        models: list.length ? list : null,
      };
      created(await post<KeyWithSecret>('/v1/admin/keys', body));
      close();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title="Create an API key">
      <form class="form" onSubmit={submit}>
        <label>
          Name
          <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        </label>
        <label>
          Budget (GNK, empty for none)
          <input name="budget" value={budget} onInput={(e) => setBudget(e.currentTarget.value)} />
        </label>
        <label>
          Budget period
          <select name="period" value={period} onChange={(e) => setPeriod(e.currentTarget.value)}>
            {['total', 'daily', 'weekly', 'monthly'].map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <label>
          Requests per minute (empty for none)
          <input name="rpm" value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} />
        </label>
        <label>
          Models (comma-separated, empty for all)
          <input name="models" value={models} onInput={(e) => setModels(e.currentTarget.value)} />
        </label>
        <ErrorLine error={error} />
        <div class="actions">
          <button type="button" onClick={close} disabled={busy}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={busy || name.trim() === ''}>
            Create key
          </button>
        </div>
      </form>
    </Modal>
  );
}

/** The secret of a new or rotated key: shown here once; closing the dialog forgets it. */
function SecretOnce({ secret, name, close }: { secret: string; name: string; close: () => void }) {
  return (
    <Modal title={`Secret of ${name}`}>
      <p>Copy it now: it is shown only this once and cannot be read again.</p>
      <input
        class="secret mono"
        data-testid="secret"
        readOnly
        value={secret}
        onFocus={(e) => e.currentTarget.select()}
      />
      <div class="actions">
        <button type="button" onClick={() => void navigator.clipboard?.writeText(secret)}>
          Copy
        </button>
        <button type="button" class="primary" onClick={close}>
          I stored it
        </button>
      </div>
    </Modal>
  );
}

async function downloadCsv(): Promise<void> {
  const res = await request('GET', '/v1/admin/usage/records?format=csv');
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = 'usage-records.csv';
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}

const DAY_S = 86_400;

/**
 * One point per UTC day from the day before the first with usage to the last: a day the ledger has
 * no row for had none, and the leading zero gives a single day a line to draw.
 */
function dailySeries(rows: LedgerTotals[]): { t: number; requests: number; ngonka: number }[] {
  const byDay = new Map<number, LedgerTotals>();
  for (const r of rows) if (r.group) byDay.set(Date.parse(`${r.group.slice(0, 10)}T00:00:00Z`) / 1000, r);
  if (byDay.size === 0) return [];
  const first = Math.min(...byDay.keys()) - DAY_S;
  const last = Math.max(...byDay.keys());
  const out = [];
  for (let t = first; t <= last; t += DAY_S) {
    const r = byDay.get(t);
    // A chart point only: a float is exact to 2^53 ngonka (9 million GNK a day).
    out.push({ t, requests: r?.requests ?? 0, ngonka: r ? Number(r.cost_ngonka) : 0 });
  }
  return out;
}

function UsageSection() {
  const usage = usePoll(
    async () => {
      const [day, key, model] = await Promise.all(
        (['day', 'key', 'model'] as const).map((g) => get<UsageTotals>(`/v1/admin/usage?group_by=${g}`)),
      );
      return { day: day!, key: key!, model: model! };
    },
    [],
    10_000,
  );
  const [error, setError] = useState<string | null>(null);
  if (!usage.data) return <ErrorLine error={usage.error} />;
  const days = dailySeries(usage.data.day.data);
  const table = (title: string, rows: LedgerTotals[]) => (
    <table>
      <thead>
        <tr>
          <th>{title}</th>
          <th>Requests</th>
          <th>Errors</th>
          <th>Input tokens</th>
          <th>Output tokens</th>
          <th>Cost</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.group ?? '-'}>
            <td>{r.group ?? '–'}</td>
            <td>{num(r.requests, 0)}</td>
            <td>{num(r.errors, 0)}</td>
            <td>{num(r.input_tokens, 0)}</td>
            <td>{num(r.output_tokens, 0)}</td>
            <td title={`${r.cost_ngonka} ngonka`}>{gnk(r.cost_ngonka, 6)}</td>
          </tr>
        ))}
        {rows.length === 0 && (
          <tr>
            <td colSpan={6}>No usage recorded.</td>
          </tr>
        )}
      </tbody>
    </table>
  );
  return (
    <>
      <div class="toolbar">
        <h2>Usage</h2>
        <button type="button" onClick={() => downloadCsv().catch((err) => setError(errorText(err)))}>
          Export records (CSV)
        </button>
      </div>
      <ErrorLine error={error ?? usage.error} />
      <Chart
        x={days.map((d) => d.t)}
        series={[
          { label: 'requests', values: days.map((d) => d.requests), color: '#2563eb' },
          { label: 'cost (ngonka)', values: days.map((d) => d.ngonka), color: '#16a34a', scale: 'ngonka' },
        ]}
        height={180}
      />
      <div class="split">
        <div>{table('Key', usage.data.key.data)}</div>
        <div>{table('Model', usage.data.model.data)}</div>
      </div>
    </>
  );
}

export function KeysPage() {
  const keys = usePoll(() => get<{ data: KeyView[] }>('/v1/admin/keys'));
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ name: string; key: string } | null>(null);
  const [confirm, setConfirm] = useState<ConfirmRequest | null>(null);
  const refresh = () => void keys.refresh();
  const revoke = (k: KeyView) =>
    setConfirm({
      title: `Revoke ${k.name}`,
      body: (
        <p>
          Requests with key {shownPrefix(k)} are refused from now on. Its spend so far (
          {gnk(k.spend_ngonka, 6)}) stays in the ledger.
        </p>
      ),
      confirm: 'Revoke',
      run: () => post(`/v1/admin/keys/${k.id}/revoke`),
      done: refresh,
    });
  const rotate = (k: KeyView) =>
    setConfirm({
      title: `Rotate ${k.name}`,
      body: (
        <p>Issue a new secret for this key; the old one ({shownPrefix(k)}) stops working. No funds move.</p>
      ),
      confirm: 'Rotate',
      run: () => post<KeyWithSecret>(`/v1/admin/keys/${k.id}/rotate`),
      done: (answer) => {
        setSecret({ name: k.name, key: (answer as KeyWithSecret).key });
        refresh();
      },
    });
  const rows = keys.data?.data ?? [];
  return (
    <>
      <div class="toolbar">
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          Create key
        </button>
      </div>
      <ErrorLine error={keys.error} />
      <table data-testid="keys">
        <thead>
          <tr>
            <th>Name</th>
            <th>Key</th>
            <th>Status</th>
            <th>Models</th>
            <th>Limits</th>
            <th>Spend</th>
            <th>Budget left</th>
            <th>Last used</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((k) => (
            <tr key={k.id} data-key={k.name}>
              <td>{k.name}</td>
              <td class="mono">{shownPrefix(k)}</td>
              <td>
                <Badge value={k.status} />
              </td>
              <td>{k.models?.join(', ') ?? 'all'}</td>
              <td>
                {[
                  k.budget_ngonka !== null && `budget ${gnk(k.budget_ngonka)} ${k.budget_period}`,
                  k.rpm !== null && `${k.rpm} rpm`,
                  k.tpm !== null && `${k.tpm} tpm`,
                  k.max_concurrent !== null && `${k.max_concurrent} at once`,
                  k.expires_at && `expires ${new Date(k.expires_at).toLocaleDateString()}`,
                ]
                  .filter(Boolean)
                  .join(', ') || 'none'}
              </td>
              <td>{gnk(k.spend_ngonka, 6)}</td>
              <td>{k.budget_remaining_ngonka === null ? '–' : gnk(k.budget_remaining_ngonka, 6)}</td>
              <td>{ago(k.last_used_at)}</td>
              <td class="row-actions">
                {!k.read_only && k.status === 'active' && (
                  <>
                    <button type="button" onClick={() => rotate(k)}>
                      Rotate
                    </button>
                    <button type="button" onClick={() => revoke(k)}>
                      Revoke
                    </button>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <UsageSection />
      {creating && (
        <CreateKey
          close={() => setCreating(false)}
          created={(k) => {
            setSecret({ name: k.name, key: k.key });
            refresh();
          }}
        />
      )}
      {secret && <SecretOnce secret={secret.key} name={secret.name} close={() => setSecret(null)} />}
      <ConfirmDialog req={confirm} close={() => setConfirm(null)} />
    </>
  );
}
