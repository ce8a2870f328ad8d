export { buildProxyApp, type ProxyDeps, type ProxyTuning } from './app.js';
