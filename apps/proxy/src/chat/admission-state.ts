// Admission's state as a plugin: the fleet-wide admission counts in Redis (admission.ts) and, with
// DEVSHARD_POC_REQUEST_MODE=off, the network's PoC phase (poc-watch.ts; spec §2.10 — `relaxed`
// serves through PoC, so only `off` reads the phase).
import { chainClientFor } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ProxyContext } from '../proxy-context.js';
import { Admission } from './admission.js';
import { PocWatch } from './poc-watch.js';

declare module 'fastify' {
  interface FastifyInstance {
    admitting: { readonly admission: Admission; readonly poc: PocWatch | undefined };
  }
}

export const admissionState = fp(
  async (app: FastifyInstance, context: ProxyContext) => {
    const { config, tuning } = context;
    const admission = new Admission({
      redis: context.infra.redis,
      keys: context.keys,
      maxConcurrent: config.limits.maxConcurrentRequests,
      maxInputTokens: config.limits.maxInputTokensInFlight,
      entryTtlMs: tuning.admissionTtlMs ?? config.proxy.admissionTtlMs,
    });
    const poc =
      config.pocRequestMode === 'off'
        ? new PocWatch(
            chainClientFor(config),
            tuning.pocCheckEveryMs,
            (error) => app.log.warn({ err: error }, 'PoC phase read failed'),
            { redis: context.infra.redis, key: context.keys.chainPhase },
          )
        : undefined;
    app.decorate('admitting', { admission, poc });
    // Not awaited: readiness never waits on the public node (routes/health.ts). Until its first
    // reading lands the phase counts as not PoC (PocWatch's state before any reading).
    app.addHook('onReady', async () => {
      void poc?.start();
    });
    app.addHook('onClose', async () => {
      poc?.stop();
      admission.stop();
    });
  },
  { name: 'admission-state' },
);
