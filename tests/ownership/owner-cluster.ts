// Test support of the multi-process ownership tests: a devnet in this process (hosts,
// chain), a migrated Postgres database holding the escrows and their sessions, a private
// redis-server (FLUSHALL-able), and owner node processes (packages/escrow-runtime/src/testing/
// owner-node-main.ts) that claim the escrows, serve inferences and can be SIGKILLed, SIGSTOPped or
// drained.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startTsProcess, type TsProcess } from '@gonka-gateway/deploy';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import type { SessionStore, StoredDiff } from '@gonka-gateway/devshard/session';
import { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { type PrivateRedis, startPrivateRedis } from '@gonka-gateway/escrow-runtime/testing';
import { closeRedis, openRedis, redisKeys } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { Gateway, type TestEscrow } from '../devshard-devnet/harness.js';
import { createRegisteredEscrows } from '../support/registered-escrows.js';

export const LEASE_TTL_MS = 1_500;
const OWNER_ENTRY = join(REPO_ROOT, 'packages/escrow-runtime/src/testing/owner-node-main.ts');

export interface OwnerProcess {
  readonly name: string;
  readonly proc: TsProcess;
  readonly url: string;
  readonly replicaId: string;
  readonly pid: number;
}

export interface OwnedInfo {
  readonly escrowId: string;
  readonly modelId: string;
  readonly state: string;
  readonly fencingToken?: string;
  readonly nonce?: string;
  readonly inFlight: number;
}

export class OwnerCluster {
  readonly owners = new Map<string, OwnerProcess>();
  readonly keyPrefix = 'own:';
  readonly keys = redisKeys('own:');
  readonly sentDiffLog: string;

  private constructor(
    readonly gateway: Gateway,
    readonly db: TestDatabase,
    readonly redisServer: PrivateRedis,
    readonly redis: ReturnType<typeof openRedis>,
    readonly storeSql: postgres.Sql,
    readonly store: SessionStore,
    readonly escrows: TestEscrow[],
  ) {
    this.sentDiffLog = join(mkdtempSync(join(tmpdir(), 'ownership-')), 'sent-diffs.jsonl');
  }

  /** Devnet, database, private Redis and `count` escrows (5 GNK, Qwen) registered active. */
  static async start(count: number): Promise<OwnerCluster> {
    const [gateway, db, redisServer] = await Promise.all([
      Gateway.start(),
      createTestDatabase(),
      startPrivateRedis(),
    ]);
    const redis = openRedis(redisServer.url);
    // A plain postgres.js pool: drizzle's wrapper (db.sql) replaces the json serializers the store uses.
    const storeSql = postgres(db.url, { max: 8, onnotice: () => {} });
    const store = new PostgresSessionStore(storeSql);
    const escrows = await createRegisteredEscrows(gateway, store, db.sql, count);
    return new OwnerCluster(gateway, db, redisServer, redis, storeSql, store, escrows);
  }

  /** Starts an owner node process and waits until it serves. */
  async startOwner(name: string): Promise<OwnerProcess> {
    const proc = startTsProcess(OWNER_ENTRY, {
      OWNER_DATABASE_URL: this.db.url,
      OWNER_REDIS_URL: this.redisServer.url,
      OWNER_KEY_PREFIX: this.keyPrefix,
      OWNER_LEASE_TTL_MS: String(LEASE_TTL_MS),
      OWNER_PUBLIC_API: this.gateway.devnet.urls.node,
      OWNER_REPLICA_ID: name,
      OWNER_SENT_DIFF_LOG: this.sentDiffLog,
      OWNER_FLUSH_IDLE_MS: '60000',
      DEVSHARD_PRIVATE_KEY: this.gateway.creator.key.exportHex(),
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const match = /OWNER_NODE_READY (\S+) (\S+)/.exec(proc.output());
      if (match) {
        const owner = { name, proc, url: match[1]!, replicaId: match[2]!, pid: proc.child.pid! };
        this.owners.set(name, owner);
        return owner;
      }
      if (proc.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`owner ${name} did not start:\n${proc.output()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async owned(owner: OwnerProcess): Promise<OwnedInfo[]> {
    const res = await fetch(`${owner.url}/owned`, { signal: AbortSignal.timeout(2_000) });
    return (await res.json()) as OwnedInfo[];
  }

  /** Escrow id → owner name, over the running owners; only serving escrows count. */
  async ownership(): Promise<Map<string, string[]>> {
    const map = new Map<string, string[]>();
    for (const owner of this.owners.values()) {
      if (owner.proc.child.exitCode !== null || owner.proc.child.signalCode !== null) continue;
      let list: OwnedInfo[];
      try {
        list = await this.owned(owner);
      } catch {
        continue; // stopped (SIGSTOP) or dying
      }
      for (const e of list) {
        if (e.state !== 'serving') continue;
        map.set(e.escrowId, [...(map.get(e.escrowId) ?? []), owner.name]);
      }
    }
    return map;
  }

  /** Every escrow is served by exactly one of the `among` owners. */
  async allOwned(among: readonly string[]): Promise<boolean> {
    const map = await this.ownership();
    return this.escrows.every((e) => {
      const by = map.get(e.id.toString());
      return by?.length === 1 && among.includes(by[0]!);
    });
  }

  /** allOwned, and ownership is balanced: each owner serves ⌊escrows / owners⌋ or ⌈…⌉ of them. */
  async balanced(among: readonly string[]): Promise<boolean> {
    const map = await this.ownership();
    if (!this.escrows.every((e) => map.get(e.id.toString())?.length === 1)) return false;
    const counts = among.map((name) => [...map.values()].filter((by) => by[0] === name).length);
    const total = counts.reduce((a, b) => a + b, 0);
    return total === this.escrows.length && counts.every((c) => c >= Math.floor(total / among.length));
  }

  /** Stored diffs of an escrow (after any snapshot: the whole log for these short sessions). */
  async storedDiffs(escrowId: bigint): Promise<readonly StoredDiff[]> {
    const stored = await this.store.load(escrowId.toString());
    if (!stored) throw new Error(`no session ${escrowId}`);
    return stored.diffs;
  }

  kill(name: string, signal: NodeJS.Signals): void {
    const owner = this.owners.get(name);
    if (!owner) throw new Error(`no owner ${name}`);
    process.kill(owner.pid, signal);
  }

  async stopOwner(name: string): Promise<void> {
    const owner = this.owners.get(name);
    if (!owner) return;
    await owner.proc.stop('SIGTERM');
    this.owners.delete(name);
  }

  async close(): Promise<void> {
    for (const owner of this.owners.values()) {
      try {
        process.kill(owner.pid, 'SIGCONT');
      } catch {
        // already gone
      }
      await owner.proc.stop('SIGKILL');
    }
    this.owners.clear();
    await closeRedis(this.redis);
    await this.storeSql.end({ timeout: 5 });
    await Promise.allSettled([this.db.drop(), this.redisServer.stop(), this.gateway.close()]);
  }
}

export interface StreamedInference {
  readonly status: number;
  readonly escrowId?: string;
  readonly receipt?: { nonce: string; confirmed: boolean };
  readonly chunks: number;
  readonly result?: {
    escrowId: string;
    nonce: string;
    status: string;
    confirmed: boolean;
    finished: boolean;
    error?: string;
  };
  readonly error?: string;
}

/** A chat body the mock model answers with 8–64 tokens (deterministic per `tag`). */
export function chatBody(tag: string, maxTokens = 64): string {
  return JSON.stringify({
    model: QWEN_MODEL,
    messages: [{ role: 'user', content: `Tell me about fencing tokens (${tag})` }],
    max_tokens: maxTokens,
    stream: true,
  });
}

/**
 * POST /infer on an owner and reads the SSE answer to its end (or until the connection breaks);
 * `onEvent` sees `receipt` and `chunk` as they arrive.
 */
export async function streamInference(
  url: string,
  query: string,
  body: string,
  onEvent?: (kind: 'receipt' | 'chunk') => void,
): Promise<StreamedInference> {
  let res: Response;
  try {
    res = await fetch(`${url}/infer?${query}`, { method: 'POST', body });
  } catch (error) {
    return { status: 0, chunks: 0, error: (error as Error).message };
  }
  if (res.status !== 200) {
    const text = await res.text().catch(() => '');
    return { status: res.status, chunks: 0, error: text };
  }
  const escrowId = res.headers.get('x-escrow-id') ?? undefined;
  let buffer = '';
  let chunks = 0;
  let receipt: StreamedInference['receipt'];
  let result: StreamedInference['result'];
  let error: string | undefined;
  const decoder = new TextDecoder();
  try {
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(part, { stream: true });
      let at = buffer.indexOf('\n\n');
      while (at >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        at = buffer.indexOf('\n\n');
        const event = /^event: (\w+)\ndata: (.*)$/s.exec(block);
        if (event?.[1] === 'receipt') {
          receipt = JSON.parse(event[2]!);
          onEvent?.('receipt');
        } else if (event?.[1] === 'result') result = JSON.parse(event[2]!);
        else if (event?.[1] === 'error') error = JSON.parse(event[2]!).error;
        else if (block.startsWith('data: ') && block !== 'data: [DONE]') {
          chunks++;
          onEvent?.('chunk');
        }
      }
    }
  } catch (e) {
    error = (e as Error).message;
  }
  return {
    status: 200,
    chunks,
    ...(escrowId ? { escrowId } : {}),
    ...(receipt ? { receipt } : {}),
    ...(result ? { result } : {}),
    ...(error ? { error } : {}),
  };
}
