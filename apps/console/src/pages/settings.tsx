// Settings: a form over GET/POST /v1/admin/settings. The API validates (unknown models, bad URLs,
// unset key variables…) and its error — message and the field it names — is shown as returned, so
// the console holds no rule of its own that could drift from the API's.
import type { AdminSettings } from '@gonka-gateway/controller/admin-api';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, post } from '../api.js';
import { ErrorLine, errorText, usePoll } from '../ui.js';

interface Form {
  default_request_max_tokens: string;
  request_max_tokens_cap: string;
  passthrough_parameters: string;
  model_limits: string;
  rotation_enabled: boolean;
  pre_poc_blocks: string;
  rotation_models: string;
  disabled_enabled: boolean;
  disabled_message: string;
  disabled_new_url: string;
}

function formOf(s: AdminSettings): Form {
  return {
    default_request_max_tokens: String(s.default_request_max_tokens),
    request_max_tokens_cap: String(s.request_max_tokens_cap),
    passthrough_parameters: s.passthrough_parameters.join(', '),
    model_limits: JSON.stringify(s.model_limits, null, 2),
    rotation_enabled: s.escrow_rotation.enabled,
    pre_poc_blocks: String(s.escrow_rotation.pre_poc_blocks),
    rotation_models: JSON.stringify(s.escrow_rotation.models, null, 2),
    disabled_enabled: s.disabled.enabled,
    disabled_message: s.disabled.message,
    disabled_new_url: s.disabled.new_url ?? '',
  };
}

function parseJson(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError(
      400,
      `${field} is not valid JSON: ${(err as Error).message}`,
      'invalid_request',
      field,
    );
  }
}

/** Numbers are sent as typed (a non-number goes to the API as is, so it names the field). */
const numberOr = (text: string) =>
  text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;

export function SettingsPage() {
  const current = usePoll(() => get<AdminSettings>('/v1/admin/settings'));
  const [form, setForm] = useState<Form | null>(null);
  const [dirty, setDirty] = useState(false);
  const [error, setError] = useState<{ text: string; param: string | null } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (current.data && !dirty) setForm(formOf(current.data));
  }, [current.data, dirty]);
  if (!form) return <ErrorLine error={current.error} />;
  const set = <K extends keyof Form>(k: K, v: Form[K]) => {
    setForm({ ...form, [k]: v });
    setDirty(true);
    setSaved(null);
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const patch = {
        default_request_max_tokens: numberOr(form.default_request_max_tokens),
        request_max_tokens_cap: numberOr(form.request_max_tokens_cap),
        passthrough_parameters: form.passthrough_parameters
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean),
        model_limits: parseJson(form.model_limits, 'model_limits'),
        escrow_rotation: {
          enabled: form.rotation_enabled,
          pre_poc_blocks: numberOr(form.pre_poc_blocks),
          models: parseJson(form.rotation_models, 'escrow_rotation.models'),
        },
        disabled: {
          enabled: form.disabled_enabled,
          message: form.disabled_message,
          new_url: form.disabled_new_url.trim() === '' ? null : form.disabled_new_url.trim(),
        },
      };
      const next = await post<AdminSettings>('/v1/admin/settings', patch);
      setDirty(false);
      setForm(formOf(next));
      setSaved(`Saved: revision ${next.revision}.`);
      void current.refresh();
    } catch (err) {
      setError({ text: errorText(err), param: err instanceof ApiError ? err.param : null });
    } finally {
      setBusy(false);
    }
  };
  const field = (name: string) => (error?.param?.startsWith(name) ? 'invalid' : '');
  return (
    <form class="form settings" onSubmit={save}>
      <p class="hint">
        Revision {current.data?.revision ?? '?'}
        {dirty
          ? ' — you have unsaved changes; the page stops refreshing this form until you save or reset.'
          : ''}
      </p>
      <fieldset>
        <legend>Requests</legend>
        <label class={field('default_request_max_tokens')}>
          Default max_tokens
          <input
            name="default_request_max_tokens"
            value={form.default_request_max_tokens}
            onInput={(e) => set('default_request_max_tokens', e.currentTarget.value)}
          />
        </label>
        <label class={field('request_max_tokens_cap')}>
          max_tokens cap
          <input
            name="request_max_tokens_cap"
            value={form.request_max_tokens_cap}
            onInput={(e) => set('request_max_tokens_cap', e.currentTarget.value)}
          />
        </label>
        <label class={field('passthrough_parameters')}>
          Passthrough parameters (comma-separated)
          <input
            name="passthrough_parameters"
            value={form.passthrough_parameters}
            onInput={(e) => set('passthrough_parameters', e.currentTarget.value)}
          />
        </label>
        <label class={field('model_limits')}>
          Model access (JSON: model_id, access_mode admin_only | api_key)
          <textarea
            name="model_limits"
            rows={4}
            value={form.model_limits}
            onInput={(e) => set('model_limits', e.currentTarget.value)}
          />
        </label>
      </fieldset>
      <fieldset>
        <legend>Escrow rotation</legend>
        <label class="check">
          <input
            type="checkbox"
            name="rotation_enabled"
            checked={form.rotation_enabled}
            onChange={(e) => set('rotation_enabled', e.currentTarget.checked)}
          />
          Rotation on
        </label>
        <label class={field('escrow_rotation.pre_poc_blocks')}>
          Pre-PoC blocks
          <input
            name="pre_poc_blocks"
            value={form.pre_poc_blocks}
            onInput={(e) => set('pre_poc_blocks', e.currentTarget.value)}
          />
        </label>
        <label class={field('escrow_rotation.models')}>
          Rotated models (JSON: model_id, temp_count, target_count, amount, private_key_env, settle)
          <textarea
            name="rotation_models"
            rows={6}
            value={form.rotation_models}
            onInput={(e) => set('rotation_models', e.currentTarget.value)}
          />
        </label>
      </fieldset>
      <fieldset>
        <legend>Disabled mode</legend>
        <label class="check">
          <input
            type="checkbox"
            name="disabled_enabled"
            checked={form.disabled_enabled}
            onChange={(e) => set('disabled_enabled', e.currentTarget.checked)}
          />
          Refuse chat requests and send clients elsewhere
        </label>
        <label class={field('disabled.message')}>
          Message
          <input
            name="disabled_message"
            value={form.disabled_message}
            onInput={(e) => set('disabled_message', e.currentTarget.value)}
          />
        </label>
        <label class={field('disabled.new_url')}>
          New URL
          <input
            name="disabled_new_url"
            value={form.disabled_new_url}
            onInput={(e) => set('disabled_new_url', e.currentTarget.value)}
          />
        </label>
      </fieldset>
      {error && (
        <p class="error" role="alert" data-testid="settings-error">
          {error.text}
        </p>
      )}
      {saved && <p class="ok">{saved}</p>}
      <div class="actions">
        <button
          type="button"
          disabled={!dirty || busy}
          onClick={() => {
            setDirty(false);
            setError(null);
            if (current.data) setForm(formOf(current.data));
          }}
        >
          Reset
        </button>
        <button type="submit" class="primary" disabled={busy}>
          Save settings
        </button>
      </div>
    </form>
  );
}
