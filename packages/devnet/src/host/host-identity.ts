// Who a devnet host is: its account and warm keys, consensus weight, models and its own server's
// URL. Its own module so the chain-facing core and the host session store both read it.
import type { PrivateKey } from '@gonka-gateway/chain';

/** A network host as the devnet runs it. */
export interface HostIdentity {
  name: string;
  address: string;
  key: PrivateKey;
  warmKey: PrivateKey;
  weight: bigint;
  models: readonly string[];
  /** Base URL of the host's own server (`{inference_url}/v1/chat/completions`). */
  inferenceUrl: string;
}
