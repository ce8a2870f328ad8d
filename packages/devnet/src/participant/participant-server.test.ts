import { sha256 } from '@gonka-gateway/chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { startTestDevnet } from '../testing/test-devnet.js';
import type { ParticipantPlugin } from './participant-server.js';

// The seam for devshard host routes: a plugin gets the host's key, the chain state and the clock.
const sessionPlugin: ParticipantPlugin = async (app, { host, core }) => {
  app.get<{ Params: { id: string } }>('/devshard/v5/sessions/:id/probe', async (request) => {
    const escrow = core.chain.committed.escrows.get(BigInt(request.params.id));
    const digest = sha256(new TextEncoder().encode(`probe ${request.params.id}`));
    return {
      host: host.address,
      height: core.blocks.latest.height.toString(),
      found: escrow !== undefined,
      signature: Buffer.from(host.key.signDigest65(digest)).toString('base64'),
      model:
        core.model.complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).completionTokens > 0,
    };
  });
};

describe('participant servers', () => {
  let devnet: Devnet;

  beforeAll(async () => {
    devnet = await startTestDevnet({ participantPlugins: [sessionPlugin] });
  });
  afterAll(() => devnet.close());

  it('each host serves its own base URL with status, identity and the plugins', async () => {
    for (const p of devnet.participants) {
      expect(await (await fetch(`${p.inferenceUrl}/v1/status`)).json()).toEqual({ status: 'ok' });
      expect(
        ((await (await fetch(`${p.inferenceUrl}/v1/identity`)).json()) as { address: string }).address,
      ).toBe(p.address);
      const probe = (await (await fetch(`${p.inferenceUrl}/devshard/v5/sessions/1/probe`)).json()) as Record<
        string,
        unknown
      >;
      expect(probe).toMatchObject({ host: p.address, height: '1', found: false, model: true });
    }
    expect(new Set(devnet.participants.map((p) => p.inferenceUrl)).size).toBe(4);
  });

  it('stops (host down) and starts again on the same URL, plugins included', async () => {
    const p = devnet.participants[1]!;
    const url = p.inferenceUrl;
    await p.stop();
    expect(p.running).toBe(false);
    await expect(fetch(`${url}/v1/status`)).rejects.toThrow();
    // Other hosts are unaffected.
    expect((await fetch(`${devnet.participants[0]!.inferenceUrl}/v1/status`)).status).toBe(200);
    await p.start();
    expect(p.inferenceUrl).toBe(url);
    expect((await fetch(`${url}/devshard/v5/sessions/2/probe`)).status).toBe(200);
  });
});
