// A fetch for the chain client that loses broadcast answers: the node takes the tx, but the answer
// never arrives and the tx index stays dark (404), so the controller cannot know whether the tx
// landed — a crash between broadcast and result looks the same (chain-and-network.md §2.4).

export interface LostBroadcast {
  readonly fetch: typeof fetch;
  /** From now on every call goes through unchanged. */
  restore(): void;
}

export function lostBroadcastFetch(): LostBroadcast {
  let dark = true;
  const lossy: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (dark && init?.method === 'POST' && url.endsWith('/cosmos/tx/v1beta1/txs')) {
      await fetch(input, init);
      throw new TypeError('fetch failed: connection reset');
    }
    if (dark && url.includes('/cosmos/tx/v1beta1/txs/')) return new Response('{"code":5}', { status: 404 });
    return fetch(input, init);
  };
  return {
    fetch: lossy,
    restore: () => {
      dark = false;
    },
  };
}
