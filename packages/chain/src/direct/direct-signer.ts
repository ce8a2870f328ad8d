// Signs direct requests for one key, owning the per-process timestamp counter
// (chain-and-network.md §4.5): `ts = max(nowNs, last + 1)`, so two requests never share a timestamp
// and a deterministic signature is never replayed. Use ONE DirectRequestSigner per key per process;
// processes sharing a key need separate sub-ranges.

import { isAddress } from '../crypto/address.js';
import type { PrivateKey } from '../crypto/private-key.js';
import { ChainError } from '../errors.js';
import { systemClockNs } from '../wall-clock.js';
import { buildDirectHeaders, type DirectRequestHeaders } from './headers.js';
import { DIRECT_SIGNING_SCHEMES, type DirectSigningScheme } from './message.js';

export interface DirectRequestSignerOptions {
  /** Default `body-sha256`: what current nodes verify (§4.2). */
  scheme?: DirectSigningScheme;
  nowNs?: () => bigint;
}

export interface SignedDirectRequest {
  body: Uint8Array;
  timestampNs: bigint;
  providerAddress: string;
  headers: DirectRequestHeaders;
}

export class DirectRequestSigner {
  readonly address: string;
  readonly scheme: DirectSigningScheme;
  readonly #key: PrivateKey;
  readonly #now: () => bigint;
  #last = 0n;

  constructor(key: PrivateKey, options: DirectRequestSignerOptions = {}) {
    const scheme = options.scheme ?? 'body-sha256';
    if (!DIRECT_SIGNING_SCHEMES.includes(scheme)) {
      throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', {
        detail: 'scheme must be body-sha256 or raw-body',
      });
    }
    this.#key = key;
    this.address = key.address;
    this.scheme = scheme;
    this.#now = options.nowNs ?? systemClockNs;
  }

  /** `max(nowNs, last + 1)`. */
  nextTimestampNs(): bigint {
    const now = this.#now();
    this.#last = now > this.#last ? now : this.#last + 1n;
    return this.#last;
  }

  /**
   * Signs `body` for `providerAddress`. An explicit `timestampNs` (tooling, vectors) is used as is
   * and still advances the counter, so later automatic timestamps stay unique.
   */
  sign(
    body: Uint8Array,
    providerAddress: string,
    options: { timestampNs?: bigint } = {},
  ): SignedDirectRequest {
    if (!isAddress(providerAddress)) {
      throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', {
        detail: 'provider address must be a gonka1… address',
      });
    }
    let timestampNs: bigint;
    if (options.timestampNs === undefined) timestampNs = this.nextTimestampNs();
    else {
      if (options.timestampNs <= 0n)
        throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'timestamp must be positive' });
      timestampNs = options.timestampNs;
      if (timestampNs > this.#last) this.#last = timestampNs;
    }
    const headers = buildDirectHeaders({
      key: this.#key,
      scheme: this.scheme,
      body,
      timestampNs,
      providerAddress,
    });
    return { body, timestampNs, providerAddress, headers };
  }
}
