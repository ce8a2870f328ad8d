export { CONSOLE_BUILD_SCRIPT, ensureConsoleBuilt } from './console-build.js';
export { DEV_ENV_KEYS, loadOrCreateDevEnv } from './dev-env.js';
export { findHaproxy, haproxyConfig, type LoadBalancer, startHaproxy } from './load-balancer.js';
export {
  buildCompiled,
  REPO_ROOT,
  startTsProcess,
  type TsProcess,
  type TsProcessOptions,
  waitForHttp,
  watchChild,
} from './ts-process.js';
