export { buildControllerApp, type ControllerDeps } from './app.js';
export { bootstrapSettingsOnce, prepareDatabase } from './prepare-database.js';
