export { buildProxyApp, type ProxyDeps } from './app.js';
