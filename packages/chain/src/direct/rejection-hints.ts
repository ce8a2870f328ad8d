// Operator hints for the typical node rejections of a direct request (chain-and-network.md §4.6).
const HINTS: Array<[RegExp, string]> = [
  [
    /transfer agent not allowed/i,
    'the provider is not on allowed_transfer_addresses; on mainnet direct requests need an allowlisted gateway (issue #1319)',
  ],
  [
    /restricted until block height/i,
    'requests are limited to allowed_developer_addresses until developer_access_params.until_block_height',
  ],
  [/capacity/i, 'the provider is at capacity: retry with another provider'],
  // Before the pubkey rule: "Unable to validate request against PubKey: invalid signature" is a
  // signature (usually signing-scheme) problem with a published key.
  [
    /signature/i,
    'signature rejected: check the signing scheme (body-sha256 vs raw-body) and that the body sent is the body signed',
  ],
  [/pub\s*key/i, 'publish the public key first (gwctl publish-pubkey)'],
  [/account not found/i, 'the requester account does not exist on chain: fund it, then publish its key'],
  [/insufficient (balance|funds)/i, 'spendable ngonka must cover (prompt estimate + max_tokens) × price'],
  [
    /timestamp/i,
    'X-Timestamp must lie within validation_params.timestamp_expiration/timestamp_advance of the latest block time: check the clock',
  ],
];

export function directRejectionHint(message: string): string | undefined {
  return HINTS.find(([re]) => re.test(message))?.[1];
}
