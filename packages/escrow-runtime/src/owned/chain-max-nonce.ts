// The escrow's max_nonce (devshard-protocol.md §7.5) for a session whose record was stored without
// one (SessionChainParams.maxNonce): its chain row's frozen max_nonce, else the chain params'
// (escrowMaxNonce). A row never changes, so its answer is kept for the escrow; the params change only
// by governance, so theirs is kept maxAgeMs and, once read, stays in use while the node cannot answer.
// Throws only while nothing could be read: the owner then keeps the session on the default ceiling
// and asks again later (OwnedSessions maxNonceOf).
import { performance } from 'node:perf_hooks';
import { type ChainClient, ChainError, queryEscrow, queryInferenceParams } from '@gonka-gateway/chain';
import { escrowMaxNonce } from '@gonka-gateway/devshard/session';

export interface ChainMaxNonceOptions {
  readonly client: ChainClient;
  /** A params read older than this is renewed when asked (default 10 min). */
  readonly maxAgeMs?: number;
}

export class ChainMaxNonce {
  readonly #o: ChainMaxNonceOptions;
  /** Escrow id → its row's max_nonce (0 on older rows). */
  readonly #rows = new Map<bigint, bigint>();
  #params: { readonly maxNonce: bigint; readonly at: number } | undefined;

  constructor(options: ChainMaxNonceOptions) {
    this.#o = options;
  }

  async of(escrowId: bigint): Promise<bigint> {
    let row = this.#rows.get(escrowId);
    if (row === undefined) {
      const { escrow } = await queryEscrow(this.#o.client, escrowId);
      if (!escrow)
        throw new ChainError('CHAIN_ERR_NOT_FOUND', { detail: `escrow ${escrowId} is not on chain` });
      row = escrow.maxNonce;
      this.#rows.set(escrowId, row);
    }
    if (row > 0n) return row;
    return escrowMaxNonce({ maxNonce: row }, { maxNonce: await this.#paramsMaxNonce() });
  }

  async #paramsMaxNonce(): Promise<bigint> {
    const kept = this.#params;
    if (kept && performance.now() - kept.at < (this.#o.maxAgeMs ?? 600_000)) return kept.maxNonce;
    try {
      const params = await queryInferenceParams(this.#o.client);
      this.#params = { maxNonce: params.devshardEscrow.maxNonce, at: performance.now() };
      return this.#params.maxNonce;
    } catch (error) {
      if (kept) return kept.maxNonce;
      throw error;
    }
  }
}
