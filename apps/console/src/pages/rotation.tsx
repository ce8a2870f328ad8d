// Rotation: where the chain is in its epoch, the stage each rotated model is in, the funding each
// creator needs against its balance, and recent events and suppressed creates
// (GET /v1/debug/rotation; spec §3.4).
import type { RotationReport } from '@gonka-gateway/controller/admin-api';
import { get } from '../api.js';
import { ago, gnk, num } from '../format.js';
import { Badge, Card, ErrorLine, usePoll } from '../ui.js';

export function RotationPage() {
  const r = usePoll(() => get<RotationReport>('/v1/debug/rotation'));
  if (!r.data) return <ErrorLine error={r.error} />;
  const { chain, funding, latest } = r.data;
  // The node did not answer: the chain's position is unknown for this read.
  const position = 'error' in chain ? undefined : chain;
  return (
    <>
      <ErrorLine error={r.error} />
      <section class="cards">
        <Card title="Rotation" value={r.data.enabled ? 'on' : 'off'} />
        <Card title="Block" value={num(position?.block_height, 0)} />
        <Card title="Epoch" value={`${num(position?.epoch_index, 0)} (${position?.phase ?? '?'})`} />
        <Card title="Blocks to next rotation" value={num(position?.blocks_until_next_rotation, 0)} />
        <Card title="Blocks to epoch switch" value={num(position?.blocks_to_epoch_switch, 0)} />
        <Card title="Planned stage" value={position?.planned_stage ?? '–'} />
      </section>
      <ErrorLine error={'error' in chain ? chain.error : undefined} />
      <h2>Stages</h2>
      <table>
        <thead>
          <tr>
            <th>Model</th>
            <th>Stage</th>
            <th>Status</th>
            <th>Epoch</th>
            <th>Target / existing</th>
            <th>Created / promoted / settled / failed</th>
            <th>Retiring</th>
            <th>Last error</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(latest).map(([model, s]) => (
            <tr key={model}>
              <td>{model}</td>
              <td>
                <Badge value={s.stage} />
              </td>
              <td>{s.status ?? '–'}</td>
              <td>{s.epoch ?? '–'}</td>
              <td>
                {s.target} / {s.existing}
              </td>
              <td>
                {s.created} / {s.promoted} / {s.settled} / {s.failed}
              </td>
              <td>{s.retiring.join(', ') || '–'}</td>
              <td>{s.last_error ?? '–'}</td>
              <td>{ago(s.updated_at)}</td>
            </tr>
          ))}
          {Object.keys(latest).length === 0 && (
            <tr>
              <td colSpan={9}>No model is rotated (Settings → escrow rotation).</td>
            </tr>
          )}
        </tbody>
      </table>
      <h2>Funding</h2>
      {'error' in funding ? (
        <ErrorLine error={funding.error} />
      ) : (
        <table>
          <thead>
            <tr>
              <th>Creator</th>
              <th>Key variable</th>
              <th>Models</th>
              <th>Needs</th>
              <th>Balance</th>
              <th>Enough</th>
            </tr>
          </thead>
          <tbody>
            {funding.map((f) => (
              <tr key={f.creator}>
                <td class="mono">{f.creator}</td>
                <td>{f.private_key_env}</td>
                <td>{f.models.join(', ')}</td>
                <td>{gnk(f.required)}</td>
                <td>{gnk(f.spendable)}</td>
                <td>{f.ok ? 'yes' : <span class="error">no</span>}</td>
              </tr>
            ))}
            {funding.length === 0 && (
              <tr>
                <td colSpan={6}>Rotation is off: nothing to fund.</td>
              </tr>
            )}
          </tbody>
        </table>
      )}
      <h2>Recent events and suppressions</h2>
      <table>
        <thead>
          <tr>
            <th>Model</th>
            <th>When</th>
            <th>What</th>
            <th>Epoch</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(latest).flatMap(([model, s]) => [
            ...s.events.map((e) => (
              <tr key={`${model}-e-${e.at}-${e.marker}`}>
                <td>{model}</td>
                <td>{ago(e.at)}</td>
                <td>{e.marker}</td>
                <td>{e.epoch ?? '–'}</td>
              </tr>
            )),
            ...s.suppressed.map((x) => (
              <tr key={`${model}-s-${x.at}-${x.role}`}>
                <td>{model}</td>
                <td>{ago(x.at)}</td>
                <td class="error">
                  suppressed {x.role} create: {x.error}
                </td>
                <td>{x.epoch}</td>
              </tr>
            )),
          ])}
        </tbody>
      </table>
    </>
  );
}
