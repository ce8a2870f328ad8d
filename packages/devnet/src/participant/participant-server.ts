// One network host's own server, whose base URL is its inference_url. It serves the signed direct
// endpoint with the host as provider, /v1/status and /v1/identity, then every plugin given in
// `participantPlugins` (the seam where devshard host routes, {inference_url}/devshard/{version}/…,
// are mounted later). A host can be stopped and started again (host down/up); it comes back on the
// same port, so its inference_url never changes. Each start builds a fresh Fastify instance, so
// plugins run again on restart.
import type { FastifyInstance } from 'fastify';
import type { DevnetCore, HostIdentity } from '../core.js';
import { createApp, listen } from '../http.js';
import { directInferenceRoutes } from '../node/direct-inference.js';
import { identityJson } from '../node/node-routes.js';
import type { ReplayCache } from '../node/replay-cache.js';

/** What a participant plugin gets: the host (its keys) and the whole devnet core (chain state, block clock, model). */
export interface ParticipantContext {
  host: HostIdentity;
  core: DevnetCore;
}

export type ParticipantPlugin = (app: FastifyInstance, ctx: ParticipantContext) => Promise<void>;

export class ParticipantServer {
  #app: FastifyInstance | null = null;
  #port: number;

  constructor(
    private readonly core: DevnetCore,
    readonly host: HostIdentity,
    private readonly replay: ReplayCache,
    private readonly plugins: readonly ParticipantPlugin[],
    private readonly bindHost: string,
    port: number,
  ) {
    this.#port = port;
  }

  get running(): boolean {
    return this.#app !== null;
  }

  async start(): Promise<void> {
    if (this.#app) return;
    const app = createApp(this.core.logger);
    const ctx: ParticipantContext = { host: this.host, core: this.core };
    await app.register(directInferenceRoutes, { core: this.core, host: this.host, replay: this.replay });
    app.get('/v1/status', async () => ({ status: 'ok' }));
    app.get('/v1/identity', async () => identityJson(this.core, this.host));
    for (const plugin of this.plugins) {
      await app.register(async (scope) => plugin(scope, ctx));
    }
    const url = await listen(app, this.bindHost, this.#port);
    this.#port = Number(new URL(url).port);
    this.#app = app;
    this.host.inferenceUrl = url;
    const record = this.core.chain.participant(this.host.address);
    if (record) record.inferenceUrl = url;
  }

  async stop(): Promise<void> {
    const app = this.#app;
    this.#app = null;
    await app?.close();
  }
}
