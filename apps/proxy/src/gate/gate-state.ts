// The gate's state as a plugin: API keys and their limits (key-directory.ts) and the settings every
// request is checked against (settings.ts), both followed through the subscriber's change feed.
// Settings are read before the app is ready; both stop when it closes.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ProxyContext } from '../proxy-context.js';
import { KeyDirectory } from './key-directory.js';
import { SettingsSource } from './settings.js';

declare module 'fastify' {
  interface FastifyInstance {
    gate: { readonly keyDirectory: KeyDirectory; readonly settings: SettingsSource };
  }
}

export const gateState = fp(
  async (app: FastifyInstance, context: ProxyContext) => {
    const keyDirectory = new KeyDirectory({ database: context.infra.database });
    const settings = new SettingsSource({
      database: context.infra.database,
      keys: keyDirectory,
      config: context.config,
      subscriber: context.subscriber,
      channel: context.keys.settingsChanges,
      ...(context.tuning.settingsRefreshMs !== undefined
        ? { refreshEveryMs: context.tuning.settingsRefreshMs }
        : {}),
      onError: (error) => app.log.warn({ err: error }, 'settings read failed'),
    });
    app.decorate('gate', { keyDirectory, settings });
    app.addHook('onReady', () => settings.start());
    app.addHook('onClose', async () => {
      await settings.stop();
      keyDirectory.stop();
    });
  },
  { name: 'gate-state' },
);
