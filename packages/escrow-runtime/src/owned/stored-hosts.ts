// The stored copy of where an escrow's participants serve (escrow_hosts): written when a session
// opens with the node's answer and when the node later gives another URL; read when the public node
// cannot answer, so a takeover, a restart or a finalize needs only Postgres (docs/operator-guide.md
// "When the public node is down"). The group itself (slots) is in the session record already.
import type { Sql } from 'postgres';

export interface StoredHosts {
  /** participant address → inference_url, as last stored for the escrow (empty when none). */
  load(escrowId: bigint): Promise<Map<string, string>>;
  /** Upserts the given participants' URLs (confirmed now). */
  save(escrowId: bigint, urls: ReadonlyMap<string, string>): Promise<void>;
}

export class PostgresStoredHosts implements StoredHosts {
  constructor(private readonly sql: Sql) {}

  async load(escrowId: bigint): Promise<Map<string, string>> {
    const rows = await this.sql<{ participant: string; inference_url: string }[]>`
      select participant, inference_url from escrow_hosts where escrow_id = ${escrowId.toString()}::numeric`;
    return new Map(rows.map((r) => [r.participant, r.inference_url]));
  }

  async save(escrowId: bigint, urls: ReadonlyMap<string, string>): Promise<void> {
    if (urls.size === 0) return;
    const participants = [...urls.keys()];
    const inferenceUrls = participants.map((p) => urls.get(p)!);
    await this.sql`
      insert into escrow_hosts (escrow_id, participant, inference_url)
      select ${escrowId.toString()}::numeric, p, u
        from unnest(${participants}::text[], ${inferenceUrls}::text[]) as x(p, u)
      on conflict (escrow_id, participant)
        do update set inference_url = excluded.inference_url, confirmed_at = now()`;
  }
}
