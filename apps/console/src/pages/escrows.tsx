// Escrows: every registered escrow (GET /v1/admin/devshards) with its nonce against its ceiling, its
// balance, burn rate and time to depletion (GET /v1/admin/summary), its owner replica and rotation
// role; and the actions create, deactivate, finalize, settle and batch settle, each behind a dialog
// that states the money involved.
import type {
  AdminSummary,
  BatchSettleLine,
  EscrowView,
  SettleLine,
  SettleSummary,
} from '@gonka-gateway/controller/admin-api';
import { useState } from 'preact/hooks';
import { api, get, post, request } from '../api.js';
import { duration, gnk } from '../format.js';
import { loadSummary } from '../summary.js';
import { Badge, ConfirmDialog, type ConfirmRequest, ErrorLine, errorText, Modal, usePoll } from '../ui.js';

/** getRandomValues, not randomUUID: the latter needs a secure context, and the console may be plain http. */
function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) =>
    b.toString(16).padStart(2, '0'),
  ).join('');
}

/** The key variable a settle names when the escrow's own source is not an env variable. */
const DEFAULT_KEY_ENV = 'DEVSHARD_PRIVATE_KEY';

function CreateForm({
  summary,
  close,
  done,
}: {
  summary: AdminSummary | undefined;
  close: () => void;
  done: () => void;
}) {
  const [model, setModel] = useState(summary?.funds[0]?.model_id ?? '');
  const [amountGnk, setAmountGnk] = useState('10');
  const [keyEnv, setKeyEnv] = useState(DEFAULT_KEY_ENV);
  const [confirming, setConfirming] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // One key per form: a retried or doubled submit creates (and locks funds in) one escrow only.
  const [idempotencyKey] = useState(() => `console-${randomHex(16)}`);
  let ngonka: bigint | null = null;
  try {
    const [w, f = ''] = amountGnk.trim().split('.');
    if (/^\d+$/.test(w ?? '') && /^\d{0,9}$/.test(f))
      ngonka = BigInt(w!) * 1_000_000_000n + BigInt(f.padEnd(9, '0') || '0');
  } catch {
    ngonka = null;
  }
  const create = async () => {
    setBusy(true);
    setError(null);
    try {
      const body = {
        amount: ngonka!.toString(),
        model_id: model.trim(),
        chain_id: summary?.chain_id ?? '',
        register: true,
        private_key_env: keyEnv.trim(),
      };
      const res = await request('POST', '/v1/admin/escrows', body, undefined, {
        'idempotency-key': idempotencyKey,
      });
      let answer = await res.json();
      // 202: the create job still runs; follow it until it ends.
      while (res.status === 202 && answer.job_id) {
        setStatus(`create job ${answer.job_id}: ${answer.state}`);
        await new Promise((r) => setTimeout(r, 1_500));
        answer = await get(`/v1/admin/escrows/jobs/${encodeURIComponent(answer.job_id)}`);
        if (answer.state === 'failed') throw new Error(answer.error ?? 'the create job failed');
        if (answer.state === 'completed') break;
      }
      close();
      done();
    } catch (err) {
      setError(errorText(err));
      setConfirming(false);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title="Create an escrow">
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          setConfirming(true);
        }}
      >
        <label>
          Model
          <input
            name="model"
            list="models"
            value={model}
            onInput={(e) => setModel(e.currentTarget.value)}
            required
          />
          <datalist id="models">
            {summary?.funds.map((m) => (
              <option key={m.model_id} value={m.model_id} />
            ))}
          </datalist>
        </label>
        <label>
          Deposit (GNK)
          <input
            name="amount"
            value={amountGnk}
            onInput={(e) => setAmountGnk(e.currentTarget.value)}
            required
          />
        </label>
        <label>
          Creator key variable (on the controller)
          <input
            name="private_key_env"
            value={keyEnv}
            onInput={(e) => setKeyEnv(e.currentTarget.value)}
            required
          />
        </label>
        {confirming && ngonka !== null ? (
          <p class="confirm-text">
            Lock <b>{gnk(ngonka)}</b> ({ngonka.toString()} ngonka) from the account of <code>{keyEnv}</code>{' '}
            in a new escrow for <b>{model}</b> on chain {summary?.chain_id ?? '?'}, and register it for
            serving.
          </p>
        ) : null}
        {ngonka === null && <p class="error">The deposit must be a number of GNK (up to 9 decimals).</p>}
        {status && <p class="hint">{status}</p>}
        <ErrorLine error={error} />
        <div class="actions">
          <button type="button" onClick={close} disabled={busy}>
            Cancel
          </button>
          {confirming ? (
            <button type="button" class="primary" data-testid="confirm" onClick={create} disabled={busy}>
              {busy ? 'Creating…' : `Create and lock ${ngonka === null ? '' : gnk(ngonka)}`}
            </button>
          ) : (
            <button type="submit" class="primary" disabled={ngonka === null || model.trim() === ''}>
              Review
            </button>
          )}
        </div>
      </form>
    </Modal>
  );
}

/** Reads the batch settle's NDJSON answer line by line (one line per escrow as it ends). */
async function batchSettle(
  ids: number[],
  keyEnv: string,
  onLine: (line: BatchSettleLine) => void,
): Promise<void> {
  const res = await request('POST', '/v1/admin/devshards/settle', {
    escrow_ids: ids.map(String),
    private_key_env: keyEnv,
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) onLine(JSON.parse(line));
      nl = buffered.indexOf('\n');
    }
  }
}

/** A line of the progress: the controller's, or the console's own when the request itself failed. */
type ProgressLine = BatchSettleLine | { error: { code: 'request_failed'; message: string } };

function BatchProgress({ lines, close }: { lines: ProgressLine[]; close: () => void }) {
  let summary: SettleSummary | undefined;
  const results: SettleLine[] = [];
  const stops: string[] = [];
  for (const l of lines) {
    if ('summary' in l) summary ??= l.summary;
    else if ('escrow_id' in l) results.push(l);
    else stops.push(l.error.message);
  }
  return (
    <Modal title="Batch settle">
      <ul class="progress">
        {results.map((l) => (
          <li key={l.escrow_id}>
            escrow {l.escrow_id}: {l.ok ? `settled, returned ${gnk(l.refund)}` : `failed: ${l.error.message}`}
          </li>
        ))}
      </ul>
      {stops.map((message) => (
        <p key={message} class="error">
          {message}
        </p>
      ))}
      <p data-testid="batch-summary">
        {summary
          ? `Done: ${summary.settled} settled, ${summary.already_settled} already settled, ${summary.failed} failed of ${summary.total}.`
          : 'Settling…'}
      </p>
      <div class="actions">
        <button type="button" onClick={close} disabled={!summary}>
          Close
        </button>
      </div>
    </Modal>
  );
}

export function EscrowsPage() {
  const escrows = usePoll(() => get<{ data: EscrowView[] }>('/v1/admin/devshards'));
  const summary = usePoll(loadSummary);
  const [confirm, setConfirm] = useState<ConfirmRequest | null>(null);
  const [creating, setCreating] = useState(false);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [batch, setBatch] = useState<ProgressLine[] | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const refresh = () => {
    void escrows.refresh();
    void summary.refresh();
  };
  const burn = new Map((summary.data?.burn ?? []).map((b) => [b.escrow_id, b]));
  const settled = new Map((summary.data?.settlements ?? []).map((s) => [s.escrow_id, s]));
  const rows = escrows.data?.data ?? [];
  const keyEnvOf = (e: EscrowView) => e.private_key_env ?? DEFAULT_KEY_ENV;
  const balanceOf = (e: EscrowView) => e.pool?.balance_estimate ?? e.amount;

  const settle = (e: EscrowView) =>
    setConfirm({
      title: `Settle escrow ${e.escrow_id}`,
      body: (
        <p>
          Drain, finalize and settle escrow {e.escrow_id} ({e.model_id}) on chain with the key of{' '}
          <code>{keyEnvOf(e)}</code>. Its deposit is <b>{gnk(e.amount)}</b>; about <b>{gnk(balanceOf(e))}</b>{' '}
          is left and returns to the creator, less what the hosts are owed and the settle fee.
        </p>
      ),
      confirm: 'Settle',
      run: () => post(`/v1/admin/devshards/${e.escrow_id}/settle`, { private_key_env: keyEnvOf(e) }),
      done: () => {
        setMessage(`Settle of escrow ${e.escrow_id} enqueued.`);
        refresh();
      },
    });
  const deactivate = (e: EscrowView) =>
    setConfirm({
      title: `Deactivate escrow ${e.escrow_id}`,
      body: (
        <p>
          Stop routing requests to escrow {e.escrow_id}. Its balance of <b>{gnk(balanceOf(e))}</b> stays
          locked until it is settled.
        </p>
      ),
      confirm: 'Deactivate',
      run: () => post(`/v1/admin/devshards/${e.escrow_id}/deactivate`),
      done: refresh,
    });
  const finalize = (e: EscrowView) =>
    setConfirm({
      title: `Finalize escrow ${e.escrow_id}`,
      body: (
        <p>
          Drain escrow {e.escrow_id} and sign its finalize document: it serves no more requests. Its balance
          of <b>{gnk(balanceOf(e))}</b> stays locked until a settle.
        </p>
      ),
      confirm: 'Finalize',
      run: () => api('POST', `/devshard/${e.escrow_id}/v1/finalize`),
      done: refresh,
    });
  const settleSelected = () => {
    const chosen = rows.filter((e) => selected.has(e.escrow_id));
    const total = chosen.reduce((sum, e) => sum + BigInt(balanceOf(e)), 0n);
    const keyEnv = chosen[0] ? keyEnvOf(chosen[0]) : DEFAULT_KEY_ENV;
    setConfirm({
      title: `Settle ${chosen.length} escrows`,
      body: (
        <p>
          Settle escrows {chosen.map((e) => e.escrow_id).join(', ')} with the key of <code>{keyEnv}</code>:
          about <b>{gnk(total)}</b> left in them returns to their creators, less what the hosts are owed and
          the fees.
        </p>
      ),
      confirm: `Settle ${chosen.length}`,
      run: async () => {
        const lines: ProgressLine[] = [];
        setBatch([]);
        setSelected(new Set());
        void batchSettle(
          chosen.map((e) => e.escrow_id),
          keyEnv,
          (line) => {
            lines.push(line);
            setBatch([...lines]);
          },
        )
          .catch((err) => {
            lines.push({ error: { code: 'request_failed', message: errorText(err) } });
            lines.push({
              summary: {
                total: chosen.length,
                settled: 0,
                already_settled: 0,
                failed: chosen.length,
                codes: {},
              },
            });
            setBatch([...lines]);
          })
          .finally(refresh);
      },
    });
  };

  return (
    <>
      <div class="toolbar">
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          Create escrow
        </button>
        <button type="button" disabled={selected.size === 0} onClick={settleSelected}>
          Settle selected ({selected.size})
        </button>
      </div>
      <ErrorLine error={escrows.error ?? summary.error} />
      {message && <p class="hint">{message}</p>}
      <table data-testid="escrows">
        <thead>
          <tr>
            <th />
            <th>Escrow</th>
            <th>Model</th>
            <th>State</th>
            <th>Pool</th>
            <th>Role</th>
            <th>Nonce / stop / ceiling</th>
            <th>Deposit</th>
            <th>Balance</th>
            <th>Burn</th>
            <th>Depletes in</th>
            <th>Owner</th>
            <th>Returned</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => {
            const b = burn.get(e.escrow_id);
            const s = settled.get(e.escrow_id);
            const open = e.state !== 'settled' && e.state !== 'failed';
            return (
              <tr key={e.escrow_id} data-escrow={e.escrow_id}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select escrow ${e.escrow_id}`}
                    disabled={!open}
                    checked={selected.has(e.escrow_id)}
                    onChange={(ev) => {
                      const next = new Set(selected);
                      if (ev.currentTarget.checked) next.add(e.escrow_id);
                      else next.delete(e.escrow_id);
                      setSelected(next);
                    }}
                  />
                </td>
                <td>{e.escrow_id}</td>
                <td>{e.model_id}</td>
                <td>
                  <Badge value={e.state} />
                  {!e.active && open && <span class="muted"> not routed</span>}
                  {e.last_error && <div class="error small">{e.last_error}</div>}
                </td>
                <td>
                  <Badge value={e.pool?.status ?? null} />
                </td>
                <td>{e.role}</td>
                <td class="nonce" data-nonce={e.nonce ?? ''}>
                  {e.nonce ?? '–'} / {e.pool?.routing_stop ?? '–'} / {e.pool?.nonce_ceiling ?? '?'}
                </td>
                <td title={`${e.amount} ngonka`}>{gnk(e.amount)}</td>
                <td title={e.pool ? `${e.pool.balance_estimate} ngonka` : ''}>
                  {e.pool ? gnk(e.pool.balance_estimate) : '–'}
                </td>
                <td>{b ? `${gnk(BigInt(Math.round(b.burn_per_s)))}/s` : '–'}</td>
                <td>{duration(b?.seconds_to_depletion)}</td>
                <td>{e.pool?.owner ?? '–'}</td>
                <td
                  class="returned"
                  title={s ? `${s.returned} ngonka; hosts ${s.spent}, fees ${s.fees}` : ''}
                >
                  {s ? gnk(s.returned) : '–'}
                </td>
                <td class="row-actions">
                  {open && e.active && (
                    <button type="button" onClick={() => deactivate(e)}>
                      Deactivate
                    </button>
                  )}
                  {open && !e.finalized && (
                    <button type="button" onClick={() => finalize(e)}>
                      Finalize
                    </button>
                  )}
                  {open && (
                    <button type="button" onClick={() => settle(e)}>
                      Settle
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
          {escrows.data && rows.length === 0 && (
            <tr>
              <td colSpan={14}>No escrows registered.</td>
            </tr>
          )}
        </tbody>
      </table>
      {creating && <CreateForm summary={summary.data} close={() => setCreating(false)} done={refresh} />}
      <ConfirmDialog req={confirm} close={() => setConfirm(null)} />
      {batch && <BatchProgress lines={batch} close={() => setBatch(null)} />}
    </>
  );
}
