import { describe, it } from 'vitest';
import { InMemorySessionStore } from './memory-store.js';
import { sessionStoreContract } from './store-contract.js';

sessionStoreContract('in-memory', () => new InMemorySessionStore(), { describe, it });
