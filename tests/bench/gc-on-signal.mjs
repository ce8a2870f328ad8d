// Preloaded into a benchmarked proxy (with --expose-gc): SIGUSR2 runs a full garbage collection, so
// a bench reads the heap the process really retains rather than garbage V8 has not yet swept.
process.on('SIGUSR2', () => globalThis.gc?.());
