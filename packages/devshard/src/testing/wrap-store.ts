// Test support: a SessionStore delegating to another, with some methods replaced.
import type { SessionStore } from '../session/store.js';

export function wrapStore(inner: SessionStore, overrides: Partial<SessionStore>): SessionStore {
  return {
    create: (r) => inner.create(r),
    load: (id) => inner.load(id),
    acquire: (id) => inner.acquire(id),
    appendDiff: (id, d, t, w) => inner.appendDiff(id, d, t, w),
    readDiffs: (id, from, to) => inner.readDiffs(id, from, to),
    saveWrites: (id, w, t) => inner.saveWrites(id, w, t),
    saveSnapshot: (id, s, t) => inner.saveSnapshot(id, s, t),
    loadSignatures: (id, n) => inner.loadSignatures(id, n),
    saveFinalizeDocument: (id, j, t) => inner.saveFinalizeDocument(id, j, t),
    ...overrides,
  };
}
