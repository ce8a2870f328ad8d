// One writer per escrow across processes (architecture §2): the Postgres session store, Redis
// leases fenced by Postgres tokens, claiming, takeover and drain. Used by the proxy replicas and the
// controller alike; packages/devshard stays free of Postgres and Redis. Named re-exports only.
export {};
