import { runService } from '@gonka-gateway/shared';
import { buildProxyApp } from './app.js';

// Operational knobs that are not part of the spec's configuration table (spec §2.10): tests and the
// devnet demo shorten leases and allow loopback hosts.
const env = process.env;
const leaseTtlMs = env.GATEWAY_LEASE_TTL_MS ? Number(env.GATEWAY_LEASE_TTL_MS) : undefined;

runService({
  name: 'proxy',
  port: (config) => config.proxy.port,
  build: (deps) =>
    buildProxyApp({
      ...deps,
      env,
      tuning: {
        ...(leaseTtlMs !== undefined && Number.isFinite(leaseTtlMs) ? { leaseTtlMs } : {}),
        allowPrivateHosts: env.GATEWAY_ALLOW_PRIVATE_HOSTS === 'on',
        ...(env.GATEWAY_FLUSH_IDLE_MS ? { flushIdleMs: Number(env.GATEWAY_FLUSH_IDLE_MS) } : {}),
        ...(env.GATEWAY_ADMISSION_TTL_MS ? { admissionTtlMs: Number(env.GATEWAY_ADMISSION_TTL_MS) } : {}),
      },
    }),
});
