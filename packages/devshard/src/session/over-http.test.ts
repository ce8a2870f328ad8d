import { afterEach, describe, expect, it } from 'vitest';
import { recoverStateSigner } from '../signing/state-signature.js';
import { InferenceStatus } from '../state/types.js';
import { serveHosts } from '../testing/http-host-server.js';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { HttpHostTransport } from '../transport/http-transport.js';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

describe('UserSession over HttpHostTransport (§4 wire path end to end)', () => {
  it('streams inferences, times out a refusal and finalizes through real HTTP', async () => {
    const t = setup();
    await t.init();
    const served = await serveHosts(t.net, t.user.address, () => t.clock.nowSeconds());
    closers.push(served.close);
    const transport = new HttpHostTransport({ signer: t.user, nowSeconds: () => t.clock.nowSeconds() });
    const s = await t.open({ transport, resolveHost: served.resolveHost });

    const lines: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await s.infer(request(), { onChunk: (l) => lines.push(new TextDecoder().decode(l)) });
      expect(r).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    expect(lines[0]).toBe('data: {"choices":[{"delta":{"content":"n1"}}]}');

    const refuser = t.net.hostOfSlot(Number((s.latestNonce + 1n) % 16n));
    refuser.behaviour.refuse = true;
    const refused = await s.infer(request());
    expect(refused).toMatchObject({ confirmed: false, status: 'failed' });
    t.clock.advance(65);
    expect(await s.checkTimeouts()).toMatchObject([{ inferenceId: refused.nonce, outcome: 'applied' }]);
    expect(s.state.inferences.get(refused.nonce)?.status).toBe(InferenceStatus.TimedOut);

    const { payload, signatures } = await s.finalize();
    expect(signatures.length).toBeGreaterThanOrEqual(11);
    for (const { slotId, signature } of signatures) {
      expect(recoverStateSigner(payload.stateRoot, ESCROW_ID, payload.nonce, signature)).toBe(
        s.state.group.slots[slotId],
      );
    }
    expect(t.net.conflicts).toEqual([]);
  });

  it('a client gone after the receipt: no chunk reaches it, the Finish still arrives over HTTP', async () => {
    const t = setup();
    await t.init();
    const served = await serveHosts(t.net, t.user.address, () => t.clock.nowSeconds());
    closers.push(served.close);
    const transport = new HttpHostTransport({ signer: t.user, nowSeconds: () => t.clock.nowSeconds() });
    const s = await t.open({ transport, resolveHost: served.resolveHost });
    const gone = new AbortController();
    const seen: string[] = [];
    const r = await s.infer(request(), {
      onReceipt: () => gone.abort(),
      onChunk: () => seen.push('chunk'),
      onDone: () => seen.push('done'),
      signal: gone.signal,
    });
    expect(seen).toEqual([]);
    expect(r).toMatchObject({ status: 'completed', confirmed: true, finished: true, clientGone: true });
    expect((await s.infer(request())).status).toBe('completed');
  });

  it('reports a host that rejects the signer (403) as a failed send, nothing else', async () => {
    const t = setup();
    await t.init();
    const served = await serveHosts(t.net, 'gonka1someoneelse', () => t.clock.nowSeconds());
    closers.push(served.close);
    const transport = new HttpHostTransport({ signer: t.user, nowSeconds: () => t.clock.nowSeconds() });
    const s = await t.open({ transport, resolveHost: served.resolveHost });
    const r = await s.infer(request());
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'forbidden', status: 403 });
    expect(s.latestNonce).toBe(1n); // the diff is persisted: the nonce is spent
    expect(s.fault).toBeUndefined();
  });
});
