// Chain tx cost, in process (packages/devnet/README.md, "Benchmarks"). Separates execution from
// signature work:
//  - verify: one secp256k1 tx-signature verification (this process's backend: native or noble);
//  - create, CheckTx: full ante + message on a branch, signature included;
//  - create, DeliverTx: per tx inside a 200-tx block (the signature was verified at CheckTx and is
//    cached, so this is execution only);
//  - create, simulate: ante + message without signature checks;
//  - settle, simulate: execution including 16 signature recoveries, and minus them.
// Run: pnpm --filter @gonka-gateway/devnet bench:tx
import { recoverAddress, secp256k1BackendName, sha256, verifyDigest64 } from '@gonka-gateway/chain';
import { stateSignatureDigest } from '@gonka-gateway/devshard';
import {
  account,
  buildSettlement,
  createEscrow,
  startTestDevnet,
  TxFactory,
} from '../src/testing/test-devnet.js';

const devnet = await startTestDevnet();
const producer = devnet.core.blocks;
const txs = new TxFactory(devnet);
const creator = account(devnet, 'creator-0');
devnet.chain.updateParams((p) => {
  p.devshardEscrow.maxEscrowsPerEpoch = 1_000_000n;
});
// CheckTx reserves only fees, so 220 creates must be affordable at delivery.
devnet.chain.fund(creator.address, 10_000n * 1_000_000_000n);

/** Runs fn 20 times to warm up, then n times measured; `i` counts across both (0 … n + 19). */
function time(label: string, n: number, fn: (i: number) => void): number {
  for (let i = 0; i < 20; i++) fn(i);
  const start = performance.now();
  for (let i = 20; i < n + 20; i++) fn(i);
  const perOp = (performance.now() - start) / n;
  process.stdout.write(`  ${label.padEnd(46)} ${(perOp * 1000).toFixed(1).padStart(8)} µs\n`);
  return perOp;
}

process.stdout.write('chain tx cost per operation (one core):\n');
const digest = sha256(new TextEncoder().encode('bench'));
const sig = creator.key.signDigest64(digest);
const verify = time(`verify one tx signature (${secp256k1BackendName})`, 300, () =>
  verifyDigest64(sig, digest, creator.key.publicKey),
);

const N = 200;
const checkTxs = Array.from({ length: N + 20 }, () => txs.createEscrow(creator.key).txBytes);
const check = time('create escrow: CheckTx (incl. signature)', N, (i) => {
  const r = producer.broadcast(checkTxs[i]!, { include: true, index: true });
  if (r.result.code !== 0) throw new Error(r.result.rawLog);
});
const pending = producer.mempoolSize;
const start = performance.now();
producer.produceBlock();
const deliver = (performance.now() - start) / pending;
process.stdout.write(
  `  ${`create escrow: DeliverTx (${pending}-tx block)`.padEnd(46)} ${(deliver * 1000).toFixed(1).padStart(8)} µs\n`,
);
if (devnet.chain.lastEscrowId() !== BigInt(pending)) throw new Error('not every create executed');

const simTx = txs.createEscrow(creator.key).txBytes;
time('create escrow: simulate (no signature)', 2000, () => producer.simulate(simTx));

const escrow = await createEscrow(devnet, txs, account(devnet, 'creator-1'), 10_000_000_000n);
const msg = buildSettlement(devnet, escrow, { nonce: 100n, fees: 100_000n });
const settleTx = txs.settle(account(devnet, 'creator-1').key, msg).txBytes;
const settle = time('settle (16 slot signatures): simulate', 100, () => {
  const r = producer.simulate(settleTx);
  if (r.code !== 0) throw new Error(r.rawLog);
});
const sigDigest = stateSignatureDigest(msg.stateRoot, escrow.id.toString(), msg.nonce);
const recover16 = time('16 signature recoveries alone', 50, () => {
  for (const s of msg.signatures) recoverAddress(sigDigest, s.signature);
});
process.stdout.write(
  `  ${'settle: execution minus recoveries'.padEnd(46)} ${((settle - recover16) * 1000).toFixed(1).padStart(8)} µs\n` +
    `  ${'create: CheckTx minus one verification'.padEnd(46)} ${((check - verify) * 1000).toFixed(1).padStart(8)} µs\n`,
);
await devnet.close();
