import { runService } from '@gonka-gateway/shared';
import { buildProxyApp } from './app.js';

runService({
  name: 'proxy',
  port: (config) => config.proxy.port,
  build: buildProxyApp,
});
