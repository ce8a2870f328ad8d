// Test support: a SessionStore delegating to another, with some methods replaced.
import type { SessionStore } from '../session/store.js';

export function wrapStore(inner: SessionStore, overrides: Partial<SessionStore>): SessionStore {
  return {
    create: (r) => inner.create(r),
    load: (id) => inner.load(id),
    acquire: (id) => inner.acquire(id),
    appendDiff: (id, d, t, c) => inner.appendDiff(id, d, t, c),
    readDiffs: (id, from, to) => inner.readDiffs(id, from, to),
    addPendingTxs: (id, txs, t) => inner.addPendingTxs(id, txs, t),
    removePendingTxs: (id, keys, t) => inner.removePendingTxs(id, keys, t),
    prunePayloads: (id, ids, t) => inner.prunePayloads(id, ids, t),
    saveSnapshot: (id, s, t) => inner.saveSnapshot(id, s, t),
    saveHostProgress: (id, a, n) => inner.saveHostProgress(id, a, n),
    saveSignatures: (id, n, s) => inner.saveSignatures(id, n, s),
    loadSignatures: (id, n) => inner.loadSignatures(id, n),
    saveFinalizeDocument: (id, j, t) => inner.saveFinalizeDocument(id, j, t),
    ...overrides,
  };
}
