// Reads from the public node that a request depends on (gateway-spec §4: bad input is a 4xx, a
// node that cannot answer is the upstream's fault): a transient node error becomes 502
// `chain_error` in the OpenAI error shape instead of a 500, and the message says that nothing was
// changed, so the operator simply retries. Only the ChainError code is shown, never a node URL.
import { ChainError } from '@gonka-gateway/chain';
import { GatewayError } from '@gonka-gateway/shared';

export async function readFromNode<T>(what: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof ChainError)) throw err;
    throw new GatewayError(
      'chain_error',
      `cannot read ${what} from the chain node (${err.code}); nothing was changed, retry`,
      { cause: err },
    );
  }
}
