// Test support (not exported): a SessionStore delegating to another, with some methods replaced.
import type { SessionStore } from '../store.js';

export function wrapStore(inner: SessionStore, overrides: Partial<SessionStore>): SessionStore {
  return {
    create: (r) => inner.create(r),
    load: (id) => inner.load(id),
    acquire: (id, t) => inner.acquire(id, t),
    appendDiff: (id, d, t) => inner.appendDiff(id, d, t),
    savePendingTxs: (id, txs, t) => inner.savePendingTxs(id, txs, t),
    saveHostProgress: (id, a, n) => inner.saveHostProgress(id, a, n),
    saveSignatures: (id, n, s) => inner.saveSignatures(id, n, s),
    loadSignatures: (id, n) => inner.loadSignatures(id, n),
    saveFinalizeDocument: (id, j, t) => inner.saveFinalizeDocument(id, j, t),
    ...overrides,
  };
}
