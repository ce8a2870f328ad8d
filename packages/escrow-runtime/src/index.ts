// One writer per escrow across processes (architecture §2): the Postgres session store, Redis
// leases fenced by Postgres tokens, claiming, takeover and drain. Used by the proxy replicas and the
// controller alike; packages/devshard stays free of Postgres and Redis. Named re-exports only.

// Postgres SessionStore (§2.1 tokens minted at acquire, §2.3 fenced write-ahead, §2.5 snapshots).
export { PostgresSessionStore } from './store/postgres-session-store.js';
