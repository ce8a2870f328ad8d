// Shared pieces of the pages: polling, the confirmation dialog every action goes through, error
// lines and the uPlot chart.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ApiError } from './api.js';

/** How often a page reads its data again (it never reloads; a hidden tab does not poll). */
export const POLL_MS = 3_000;

export interface Polled<T> {
  data: T | undefined;
  error: string | null;
  refresh: () => Promise<void>;
}

/** Reads `load` now and every POLL_MS while the tab is visible; `refresh` reads at once. */
export function usePoll<T>(load: () => Promise<T>, deps: unknown[] = [], every = POLL_MS): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const loadRef = useRef(load);
  loadRef.current = load;
  const refresh = useCallback(async () => {
    try {
      setData(await loadRef.current());
      setError(null);
    } catch (err) {
      setError(errorText(err));
    }
  }, []);
  // Restarts when the caller's query inputs (deps) change.
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      if (!document.hidden) await refresh();
      if (!stopped) timer = setTimeout(tick, every);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, deps);
  return { data, error, refresh };
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError) {
    return `${err.message}${err.param ? ` (${err.param})` : ''}${err.code ? ` [${err.code}]` : ''}`;
  }
  return (err as Error).message ?? String(err);
}

export function ErrorLine({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

export function Card({ title, value, hint }: { title: string; value: ComponentChildren; hint?: string }) {
  return (
    <div class="card" title={hint}>
      <div class="card-title">{title}</div>
      <div class="card-value">{value}</div>
    </div>
  );
}

export interface ConfirmRequest {
  title: string;
  /** What the action does, with the money involved. */
  body: ComponentChildren;
  confirm: string;
  run: () => Promise<unknown>;
  /** Called with run's result once it succeeded. */
  done?: (result: unknown) => void;
}

/** The dialog every mutating action passes: it states what happens, then runs it and shows errors. */
export function ConfirmDialog({ req, close }: { req: ConfirmRequest | null; close: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!req) return null;
  const go = async () => {
    setBusy(true);
    setError(null);
    try {
      const result = await req.run();
      close();
      req.done?.(result);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="overlay">
      <div class="dialog" role="dialog" aria-modal="true" aria-label={req.title}>
        <h3>{req.title}</h3>
        <div class="dialog-body">{req.body}</div>
        <ErrorLine error={error} />
        <div class="actions">
          <button type="button" onClick={close} disabled={busy}>
            Cancel
          </button>
          <button type="button" class="primary" onClick={go} disabled={busy} data-testid="confirm">
            {busy ? 'Working…' : req.confirm}
          </button>
        </div>
      </div>
    </div>
  );
}

/** A modal with free content (forms, a secret shown once). */
export function Modal({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <div class="overlay">
      <div class="dialog" role="dialog" aria-modal="true" aria-label={title}>
        <h3>{title}</h3>
        {children}
      </div>
    </div>
  );
}

export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
  /** A series on its own scale gets its own axis, on the right (e.g. cost beside requests). */
  scale?: string;
}

/**
 * An axis tick: two significant digits below one, so a right-hand axis of small amounts (micro-GNK
 * of spending) reads 0.000024 where the default rounding would print 0.
 */
function tick(v: number | null): string {
  if (v === null) return '';
  if (v === 0 || Math.abs(v) >= 1) return v.toLocaleString('en-US', { maximumFractionDigits: 2 });
  return Number(v.toPrecision(2)).toString();
}

/** Holds each value until the next point: totals that change only at events (uPlot's stepped path). */
const stepped = uPlot.paths.stepped?.({ align: 1 });

/** A small uPlot line chart; `x` in seconds since the epoch. */
export function Chart({
  x,
  series,
  height = 200,
  steps = false,
}: {
  x: number[];
  series: Series[];
  height?: number;
  /** Draw steps instead of lines between points. */
  steps?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('|');
  // Rebuilt only when the series or the height change; new data goes through setData below.
  useEffect(() => {
    if (!box.current) return;
    const opts: uPlot.Options = {
      width: box.current.clientWidth || 600,
      height,
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          spanGaps: true,
          scale: s.scale ?? 'y',
          ...(steps && stepped ? { paths: stepped } : {}),
        })),
      ],
      axes: [
        {},
        { size: 60, scale: 'y' },
        // One axis per extra scale, however many series share it.
        ...series
          .filter((s, i) => s.scale !== undefined && series.findIndex((o) => o.scale === s.scale) === i)
          .map((s) => ({
            size: 70,
            scale: s.scale,
            side: 1,
            stroke: s.color,
            grid: { show: false },
            values: (_u: uPlot, splits: number[]) => splits.map(tick),
          })),
      ],
      legend: { show: true },
    };
    plot.current = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, box.current);
    const resize = () => plot.current?.setSize({ width: box.current?.clientWidth || 600, height });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape, height, steps]);
  useEffect(() => {
    plot.current?.setData([x, ...series.map((s) => s.values)] as uPlot.AlignedData);
  });
  return <div class="chart" ref={box} />;
}

export function Badge({ value }: { value: string | null | undefined }) {
  return <span class={`badge badge-${value ?? 'none'}`}>{value ?? '–'}</span>;
}
