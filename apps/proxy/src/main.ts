import { runService } from '@gonka-gateway/shared';
import { buildProxyApp } from './app.js';

// Every knob (lease TTL, idle flush, admission TTL, private hosts) comes from the validated config
// (config.proxy, README "Configuration"); tests and the devnet demo set them through the environment.
runService({
  name: 'proxy',
  port: (config) => config.proxy.port,
  build: (deps) => buildProxyApp({ ...deps, env: process.env }),
});
