// The served-bytes and dominant-host counters follow the session events that
// OwnedSessions hands the proxy, with the verdict as their only label.
import type { SessionEvent } from '@gonka-gateway/devshard/session';
import { createMetricsRegistry } from '@gonka-gateway/shared';
import { describe, expect, it } from 'vitest';
import { createProxyMetrics } from './proxy-metrics.js';

const hash = new Uint8Array(32);
const served = (verdict: 'match' | 'mismatch' | 'truncated'): SessionEvent => ({
  type: 'served_bytes',
  host: 'gonka1host',
  inferenceId: 7n,
  verdict,
  claimed: hash,
  received: hash,
  bytes: 120,
});

describe('proxy metrics from session events', () => {
  it('counts served-bytes verdicts by verdict and dominant-host blocks, ignoring other events', async () => {
    const registry = createMetricsRegistry({ app: 'proxy', version: 'test' });
    const metrics = createProxyMetrics(registry, () => []);
    metrics.onSessionEvent(1n, served('mismatch'));
    metrics.onSessionEvent(2n, served('match'));
    metrics.onSessionEvent(2n, served('match'));
    metrics.onSessionEvent(1n, { type: 'dominant_host_blocked', host: 'gonka1host', inferenceId: 7n });
    metrics.onSessionEvent(1n, { type: 'snapshot_saved', nonce: 9n });
    const text = await registry.metrics();
    expect(text).toMatch(/^devshard_gateway_served_bytes_verdicts_total\{verdict="mismatch"\} 1$/m);
    expect(text).toMatch(/^devshard_gateway_served_bytes_verdicts_total\{verdict="match"\} 2$/m);
    expect(text).not.toMatch(/verdict="truncated"/);
    expect(text).toMatch(/^devshard_gateway_dominant_host_blocks_total 1$/m);
    // Bounded labels: neither the host nor the escrow id is a label.
    expect(text).not.toContain('gonka1host');
  });

  it('counts answered requests and their tokens, added to requests_total and tokens_total at each scrape', async () => {
    const registry = createMetricsRegistry({ app: 'proxy', version: 'test' });
    const metrics = createProxyMetrics(registry, () => []);
    metrics.countRequest({ route: 'pooled', model: 'm1', status: '200' }, 10, 64);
    metrics.countRequest({ route: 'pooled', model: 'm1', status: '200' }, 12, 60);
    metrics.countRequest({ route: 'escrow', model: 'm1', status: '502' }, 5, 0);
    let text = await registry.metrics();
    expect(text).toMatch(/^devshard_gateway_requests_total\{route="pooled",model="m1",status="200"\} 2$/m);
    expect(text).toMatch(/^devshard_gateway_requests_total\{route="escrow",model="m1",status="502"\} 1$/m);
    expect(text).toMatch(/^devshard_gateway_tokens_total\{direction="input"\} 27$/m);
    expect(text).toMatch(/^devshard_gateway_tokens_total\{direction="output"\} 124$/m);
    // A second scrape adds only what came since.
    metrics.countRequest({ route: 'pooled', model: 'm1', status: '200' }, 1, 2);
    text = await registry.metrics();
    expect(text).toMatch(/^devshard_gateway_requests_total\{route="pooled",model="m1",status="200"\} 3$/m);
    expect(text).toMatch(/^devshard_gateway_requests_total\{route="escrow",model="m1",status="502"\} 1$/m);
    expect(text).toMatch(/^devshard_gateway_tokens_total\{direction="input"\} 28$/m);
    expect(text).toMatch(/^devshard_gateway_tokens_total\{direction="output"\} 126$/m);
  });
});

describe('per-request metrics kept in plain numbers until a scrape', () => {
  it('chat_in_flight and the latency histograms show what happened since the last scrape', async () => {
    const registry = createMetricsRegistry({ app: 'proxy', version: 'test' });
    const metrics = createProxyMetrics(registry, () => []);
    metrics.chatStarted();
    metrics.chatStarted();
    metrics.chatEnded();
    metrics.addedLatency.observe(0.7);
    metrics.addedLatency.observe(4);
    let text = await registry.metrics();
    expect(text).toMatch(/^devshard_gateway_chat_in_flight 1$/m);
    expect(text).toMatch(/^devshard_gateway_added_latency_ms_bucket\{le="1"\} 1$/m);
    expect(text).toMatch(/^devshard_gateway_added_latency_ms_count 2$/m);
    // Past the bound, observations reach the histogram without a scrape; none is counted twice.
    for (let i = 0; i < 1_500; i++) metrics.upstreamLatency.observe(2);
    metrics.chatEnded();
    text = await registry.metrics();
    expect(text).toMatch(/^devshard_gateway_chat_in_flight 0$/m);
    expect(text).toMatch(/^devshard_gateway_upstream_latency_ms_count 1500$/m);
    expect(text).toMatch(/^devshard_gateway_added_latency_ms_count 2$/m);
  });
});
