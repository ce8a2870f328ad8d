import { describe, it } from 'vitest';
import { sessionStoreContract } from '../testing/store-contract.js';
import { InMemorySessionStore } from './memory-store.js';

sessionStoreContract('in-memory', () => new InMemorySessionStore(), { describe, it });
