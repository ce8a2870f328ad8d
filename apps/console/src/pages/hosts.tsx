// Hosts: the serving health of each (participant, model) as the proxies record it
// (GET /v1/admin/hosts), with the operator's lift of a quarantine (POST /v1/admin/hosts/:id/lift).
import type { HostView } from '@gonka-gateway/controller/admin-api';
import { useState } from 'preact/hooks';
import { get, post } from '../api.js';
import { ago, num } from '../format.js';
import { Badge, ConfirmDialog, type ConfirmRequest, ErrorLine, usePoll } from '../ui.js';

export function HostsPage() {
  const hosts = usePoll(() => get<{ data: HostView[] }>('/v1/admin/hosts'));
  const [confirm, setConfirm] = useState<ConfirmRequest | null>(null);
  const lift = (h: HostView) =>
    setConfirm({
      title: 'Lift quarantine',
      body: (
        <p>
          Let {h.participant} serve {h.model} again at once: its record turns healthy on every replica. No
          funds move.
        </p>
      ),
      confirm: 'Lift',
      run: () => post(`/v1/admin/hosts/${encodeURIComponent(h.participant)}/lift`, { model: h.model }),
      done: () => void hosts.refresh(),
    });
  const rows = hosts.data?.data ?? [];
  return (
    <>
      <ErrorLine error={hosts.error} />
      <table>
        <thead>
          <tr>
            <th>Participant</th>
            <th>Model</th>
            <th>State</th>
            <th>Receipt</th>
            <th>First token</th>
            <th>Tokens/s</th>
            <th>Attempts</th>
            <th>Failures</th>
            <th>In a row</th>
            <th>Quarantines</th>
            <th>Last error</th>
            <th>Updated</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((h) => (
            <tr key={`${h.participant}|${h.model}`}>
              <td class="mono">{h.participant}</td>
              <td>{h.model}</td>
              <td>
                <Badge value={h.state} />
                {h.quarantined_until && (
                  <div class="muted small">until {new Date(h.quarantined_until).toLocaleTimeString()}</div>
                )}
              </td>
              <td>{h.receipt_ms === null ? '–' : `${num(h.receipt_ms, 0)} ms`}</td>
              <td>{h.first_token_ms === null ? '–' : `${num(h.first_token_ms, 0)} ms`}</td>
              <td>{num(h.tokens_per_s, 1)}</td>
              <td>{num(h.counters.attempts ?? 0, 0)}</td>
              <td>{num(h.counters.failures ?? 0, 0)}</td>
              <td>{num(h.consecutive_failures ?? 0, 0)}</td>
              <td>{num(h.times_quarantined ?? 0, 0)}</td>
              <td>
                {h.last_error ?? '–'}
                {h.last_error_at && <div class="muted small">{ago(h.last_error_at)}</div>}
              </td>
              <td>{ago(h.updated_at)}</td>
              <td>
                {h.state === 'quarantined' && (
                  <button type="button" onClick={() => lift(h)}>
                    Lift quarantine
                  </button>
                )}
              </td>
            </tr>
          ))}
          {hosts.data && rows.length === 0 && (
            <tr>
              <td colSpan={13}>No host has served yet.</td>
            </tr>
          )}
        </tbody>
      </table>
      <ConfirmDialog req={confirm} close={() => setConfirm(null)} />
    </>
  );
}
