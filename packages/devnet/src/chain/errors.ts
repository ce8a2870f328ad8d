// Tx rejection codes. Ante and bank failures use the Cosmos SDK root codespace `sdk` with its
// registered codes (cosmos-sdk types/errors); raw_log is "<detail>: <description>" as errorsmod.Wrap
// prints it. Keeper failures use codespace `inference`.
//
// The real keeper returns most escrow failures as unregistered errors (fmt.Errorf → codespace
// `undefined`, code 1); only a few have registered codes. The devnet gives each rule family its
// own `inference` code so tests can tell them apart. A gateway must branch on `code != 0` and treat
// raw_log as text, never on these particular numbers.

export class TxError extends Error {
  constructor(
    readonly codespace: string,
    readonly code: number,
    readonly detail: string,
    readonly description: string,
  ) {
    super(detail ? `${detail}: ${description}` : description);
    this.name = 'TxError';
  }
}

const sdk = (code: number, description: string) => (detail: string) =>
  new TxError('sdk', code, detail, description);

/** Cosmos SDK root errors used by the devnet (codespace `sdk`). */
export const SdkErrors = {
  txDecode: sdk(2, 'tx parse error'),
  unauthorized: sdk(4, 'unauthorized'),
  insufficientFunds: sdk(5, 'insufficient funds'),
  unknownRequest: sdk(6, 'unknown request'),
  invalidAddress: sdk(7, 'invalid address'),
  invalidPubKey: sdk(8, 'invalid pubkey'),
  unknownAddress: sdk(9, 'unknown address'),
  invalidCoins: sdk(10, 'invalid coins'),
  outOfGas: sdk(11, 'out of gas'),
  memoTooLarge: sdk(12, 'memo too large'),
  insufficientFee: sdk(13, 'insufficient fee'),
  noSignatures: sdk(15, 'no signatures supplied'),
  invalidRequest: sdk(18, 'invalid request'),
  txInMempoolCache: sdk(19, 'tx already in mempool'),
  txTimeoutHeight: sdk(30, 'tx timeout height'),
  wrongSequence: sdk(32, 'incorrect account sequence'),
  txTimeout: sdk(42, 'tx timeout'),
} as const;

const inference = (code: number, description: string) => (detail: string) =>
  new TxError('inference', code, detail, description);

/** Keeper errors (codespace `inference`). 1103 is the chain's registered code; the rest are devnet's. */
export const InferenceErrors = {
  participantNotFound: inference(1103, 'participant not found'),
  notAllowedEscrowCreator: inference(1170, 'address is not in the devshard escrow allowlist'),
  invalidEscrowRequest: inference(1171, 'invalid devshard escrow request'),
  epochEscrowLimit: inference(1172, 'devshard escrow limit for the epoch reached'),
  noValidationWeights: inference(1173, 'no validation weights in epoch group'),
  escrowNotFound: inference(1174, 'devshard escrow not found'),
  escrowSettled: inference(1175, 'devshard escrow already settled'),
  invalidSettlement: inference(1176, 'invalid devshard settlement'),
  invalidSettlementSignature: inference(1177, 'invalid devshard settlement signature'),
  insufficientQuorum: inference(1178, 'insufficient devshard settlement quorum'),
  settlementEpoch: inference(1179, 'devshard settlement outside the escrow epoch window'),
} as const;
