// Every query function parses the real devnet JSON (chain REST, RPC and node API, direct and
// through the node's /chain-api and /chain-rpc prefixes), and what it returns agrees with the
// devnet's own state: params, escrow, balances, accounts, chain id, RPC status, epochs with the PoC
// and epoch-switch computations, participants, governance models, identity.
import {
  blocksUntilEpochSwitch,
  broadcastAndWait,
  type ChainClient,
  connectTxSigner,
  createChainClient,
  epochStagesFromParams,
  epochSwitchHeight,
  findEscrowCreatedEvents,
  isChainError,
  isPocActive,
  PrivateKey,
  queryAccount,
  queryBalance,
  queryBalances,
  queryChainId,
  queryEscrow,
  queryGovernanceModels,
  queryIdentity,
  queryInferenceParams,
  queryLatestEpoch,
  queryNodeAccount,
  queryParticipants,
  queryRpcStatus,
} from '@gonka-gateway/chain';
import { DEVNET_MODELS, type Devnet, GNK, MINIMAX_MODEL, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { account, clientFor, gwctl, participant, startChainDevnet, UNTIL_INCLUDED } from './harness.js';

let devnet: Devnet;
let client: ChainClient;
/** The same devnet through the public node's prefixes, as against node2.gonka.ai:8000. */
let viaNode: ChainClient;
let escrowId: bigint;

beforeAll(async () => {
  devnet = await startChainDevnet();
  client = clientFor(devnet);
  viaNode = createChainClient({
    chainRest: `${devnet.urls.node}/chain-api`,
    chainRpc: `${devnet.urls.node}/chain-rpc`,
    publicApi: devnet.urls.node,
  });
  const creator = account(devnet, 'creator-2');
  const signer = await connectTxSigner(client, creator.key);
  const tx = signer.prepareCreateEscrow(
    { amount: 8n * GNK, modelId: MINIMAX_MODEL },
    (await queryInferenceParams(client)).fee,
  );
  const outcome = await broadcastAndWait(client, tx, UNTIL_INCLUDED);
  if (outcome.status !== 'included') throw new Error(`setup escrow not included: ${JSON.stringify(outcome)}`);
  escrowId = findEscrowCreatedEvents(outcome.events)[0]!.escrowId;
  // From here on the chain moves only when a test steps it.
  devnet.blocks.pause();
});

afterAll(async () => {
  await devnet?.close();
});

afterEach(() => {
  devnet.faults.set({
    nodeQuery: undefined,
    chainQuery: undefined,
    excludedParticipants: undefined,
    modelsMissing: undefined,
  });
  devnet.epochs.setConfirmationPoc(null);
});

describe('chain REST', () => {
  it('inference params: every typed field equals the devnet genesis params', async () => {
    for (const c of [client, viaNode]) {
      const p = await queryInferenceParams(c);
      const live = devnet.chain.params();
      // One shape on both sides (@gonka-gateway/chain's); the devnet adds only the clear-grace field.
      const { inferenceClearGraceSeconds: _devnetOnly, ...escrow } = live.devshardEscrow;
      expect(p.devshardEscrow).toEqual(escrow);
      expect(p.epoch).toEqual(live.epoch);
      expect(p.fee).toEqual(live.fee);
      expect(p.validation).toEqual(live.validation);
      expect(p.allowedTransferAddresses).toEqual(live.transferAgentAccess.allowedTransferAddresses);
      expect(p.developerAccess).toEqual(live.developerAccess);
      expect(p.devshardEscrow.allowedCreatorAddresses).toContain(account(devnet, 'creator-0').address);
    }
  });

  it('escrow: the created row, and found=false for an id never used', async () => {
    const row = devnet.chain.escrow(escrowId)!;
    for (const c of [client, viaNode]) {
      const { found, escrow } = await queryEscrow(c, escrowId);
      expect(found).toBe(true);
      expect(escrow).toMatchObject({
        id: escrowId,
        creator: row.creator,
        amount: 8n * GNK,
        slots: [...row.slots],
        epochIndex: row.epochIndex,
        appHash: row.appHash,
        settled: false,
        modelId: MINIMAX_MODEL,
        maxNonce: BigInt(row.maxNonce),
      });
      expect(await queryEscrow(c, escrowId + 1000n)).toEqual({ found: false, escrow: null });
    }
  });

  it('balances: exact ngonka of dev accounts, hosts and module accounts; an unknown address holds nothing', async () => {
    const addresses = [
      ...devnet.accounts.map((a) => a.address),
      ...devnet.participants.map((p) => p.address),
      devnet.chain.moduleAddress('inference'),
      devnet.chain.moduleAddress('fee_collector'),
    ];
    for (const address of addresses) {
      expect(await queryBalance(client, address, 'ngonka')).toBe(devnet.chain.balanceOf(address));
    }
    expect(await queryBalances(viaNode, account(devnet, 'creator-2').address)).toEqual([
      { denom: 'ngonka', amount: devnet.chain.balanceOf(account(devnet, 'creator-2').address) },
    ]);
    const nobody = PrivateKey.random().address;
    expect(await queryBalances(client, nobody)).toEqual([]);
    expect(await queryBalance(client, nobody, 'ngonka')).toBe(0n);
  });

  it('auth accounts: base accounts with and without a pubkey, a module account, and null for an unknown address', async () => {
    const creator = account(devnet, 'creator-0');
    const a = await queryAccount(client, creator.address);
    const record = devnet.chain.account(creator.address)!;
    expect(a).toEqual({
      type: '/cosmos.auth.v1beta1.BaseAccount',
      address: creator.address,
      accountNumber: record.accountNumber,
      sequence: record.sequence,
      pubKey: creator.key.publicKey,
      pubKeyType: '/cosmos.crypto.secp256k1.PubKey',
    });
    const fresh = await queryAccount(viaNode, account(devnet, 'outsider-fresh').address);
    expect(fresh).toMatchObject({ pubKey: null, pubKeyType: null });

    const moduleAddress = devnet.chain.moduleAddress('inference');
    expect(await queryAccount(client, moduleAddress)).toMatchObject({
      type: '/cosmos.auth.v1beta1.ModuleAccount',
      address: moduleAddress,
      accountNumber: devnet.chain.account(moduleAddress)!.accountNumber,
    });
    expect(await queryAccount(client, PrivateKey.random().address)).toBeNull();
  });

  it('chain id from node_info', async () => {
    expect(await queryChainId(client)).toBe('gonka-devnet');
    expect(await queryChainId(viaNode)).toBe(devnet.chainId);
  });
});

describe('CometBFT RPC', () => {
  it('status: latest height, block time to the nanosecond, chain id', async () => {
    devnet.blocks.step();
    for (const c of [client, viaNode]) {
      const s = await queryRpcStatus(c);
      expect(s.latestBlockHeight).toBe(devnet.blocks.height);
      expect(s.latestBlockTimeNs).toBe(devnet.blocks.timeNs);
      expect(s.chainId).toBe(devnet.chainId);
    }
  });
});

describe('node API', () => {
  /** Steps (paused chain) to `height` exactly. */
  function stepTo(height: bigint) {
    expect(devnet.blocks.height).toBeLessThanOrEqual(height);
    devnet.blocks.step(Number(height - devnet.blocks.height));
    expect(devnet.blocks.height).toBe(height);
  }

  it('latest epoch through the PoC phases: phase, stages, switch height and PoC flag agree with the devnet', async () => {
    const p = devnet.chain.params().epoch;
    const e1 = p.epochShift + p.epochLength; // poc_start of epoch 1 (200)
    const switch1 =
      e1 + p.pocStageDuration + p.pocValidationDelay + p.pocValidationDuration + p.setNewValidatorsDelay;
    const params = await queryInferenceParams(client);
    const expectations: Array<[bigint, string, bigint, boolean, bigint]> = [
      // height, phase, latest epoch index, PoC active, switch height
      // Epoch 0 has no stages of its own: the switch is epoch 1's set_new_validators (§3.3 rule 2).
      [devnet.blocks.height, 'Inference', 0n, false, switch1],
      [e1, 'PoCGenerate', 1n, true, switch1],
      [e1 + p.pocStageDuration, 'PoCGenerateWindDown', 1n, true, switch1],
      [e1 + p.pocStageDuration + p.pocValidationDelay, 'PoCValidate', 1n, true, switch1],
      [switch1 - 1n, 'PoCValidateWindDown', 1n, true, switch1],
      [switch1, 'Inference', 1n, false, switch1],
      [switch1 + 1n, 'Inference', 1n, false, switch1 + p.epochLength],
    ];
    for (const [height, phase, index, poc, switchAt] of expectations) {
      stepTo(height);
      const epoch = await queryLatestEpoch(client);
      const devnetView = devnet.epochs.current();
      expect(epoch).toMatchObject({ blockHeight: height, phase, epochIndex: index });
      expect(devnetView.phase).toBe(phase);
      expect(devnetView.latest).toBe(index);
      expect(isPocActive(epoch)).toBe(poc);
      expect(epochSwitchHeight(epoch)).toBe(switchAt);
      expect(blocksUntilEpochSwitch(epoch)).toBe(switchAt - height);
      expect(epoch.epochStages).toMatchObject({
        epochIndex: index,
        setNewValidators: devnetView.stages.setNewValidators,
        nextPocStart: devnetView.stages.nextPocStart,
      });
      if (index > 0n) {
        expect(epoch.pocStartBlockHeight).toBe(devnetView.stages.pocStart);
        expect(epochStagesFromParams(epoch.pocStartBlockHeight, params.epoch)).toMatchObject({
          setNewValidators: devnetView.stages.setNewValidators,
          nextPocStart: devnetView.stages.nextPocStart,
        });
      }
    }
    expect(devnet.chain.epoch()).toBe(1n);
  });

  it('confirmation PoC: active in generation, inactive once completed', async () => {
    devnet.epochs.setConfirmationPoc('CONFIRMATION_POC_GENERATION');
    const active = await queryLatestEpoch(viaNode);
    expect(active.phase).toBe('Inference');
    expect(active.isConfirmationPocActive).toBe(true);
    expect(active.confirmationPoc).toEqual({
      phase: 'CONFIRMATION_POC_GENERATION',
      triggerHeight: devnet.blocks.height,
    });
    expect(isPocActive(active)).toBe(true);

    devnet.epochs.setConfirmationPoc('CONFIRMATION_POC_COMPLETED');
    const done = await queryLatestEpoch(client);
    expect(done.confirmationPoc?.phase).toBe('CONFIRMATION_POC_COMPLETED');
    expect(isPocActive(done)).toBe(false);
  });

  it('participants: addresses, inference URLs, weights and models; excluded ones dropped; missing models not listed', async () => {
    const snapshot = await queryParticipants(client);
    expect(snapshot.excludedAddresses).toEqual([]);
    expect(snapshot.participants.map((p) => ({ ...p, raw: undefined }))).toEqual(
      devnet.participants.map((p) => ({
        address: p.address,
        inferenceUrl: p.inferenceUrl,
        weight: p.weight,
        models: [...p.models],
        raw: undefined,
      })),
    );
    const byEpoch = await queryParticipants(client, devnet.chain.epoch());
    expect(byEpoch.participants.map((p) => p.address)).toEqual(devnet.participants.map((p) => p.address));

    const host2 = participant(devnet, 'host-2').address;
    devnet.faults.set({ excludedParticipants: [host2], modelsMissing: [MINIMAX_MODEL] });
    const faulted = await queryParticipants(client);
    expect(faulted.excludedAddresses).toEqual([host2]);
    expect(faulted.participants.map((p) => p.address)).not.toContain(host2);
    expect(faulted.participants).toHaveLength(devnet.participants.length - 1);
    for (const p of faulted.participants) expect(p.models).toEqual([QWEN_MODEL]);
  });

  it('governance models: both devnet models with their compute and validation fields', async () => {
    const models = await queryGovernanceModels(client);
    expect(models.map((m) => m.id)).toEqual([...DEVNET_MODELS]);
    const qwen = models.find((m) => m.id === QWEN_MODEL)!;
    expect(qwen).toMatchObject({
      proposedBy: 'genesis',
      unitsOfComputePerToken: 1000n,
      hfRepo: QWEN_MODEL,
      modelArgs: ['--max-model-len', '240000'],
      vRam: 640n,
      throughputPerNonce: 1000n,
      validationThreshold: { value: 970n, exponent: -3 },
      contextWindow: 240000n,
    });
  });

  it('identity of the node (host-0) and of a host: its address, no delegates', async () => {
    const node = await queryIdentity(client);
    expect(node).toMatchObject({ address: participant(devnet, 'host-0').address, delegates: [] });
    const host3 = participant(devnet, 'host-3');
    const own = await queryIdentity(createChainClient({ publicApi: host3.inferenceUrl }));
    expect(own).toMatchObject({ address: host3.address, delegates: [] });
  });

  it('node account: pubkey and spendable balance of a published account', async () => {
    const creator = account(devnet, 'creator-1');
    const a = await queryNodeAccount(client, creator.address);
    expect(a).toMatchObject({
      pubKey: creator.key.publicKey,
      balance: devnet.chain.spendableOf(creator.address),
      denom: 'ngonka',
    });
  });
});

describe('query faults come back as typed errors', () => {
  it('a failing chain query: CHAIN_ERR_HTTP_STATUS naming base and path; gwctl exits 1 with the code', async () => {
    devnet.faults.set({ chainQuery: { status: 503, match: '/inference/params', remaining: 2 } });
    const err = await queryInferenceParams(client).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isChainError(err, 'CHAIN_ERR_HTTP_STATUS')).toBe(true);
    expect(err).toMatchObject({
      status: 503,
      endpoint: 'GET /productscience/inference/inference/params (chain REST)',
    });
    const run = await gwctl(devnet, ['params']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^gwctl: GET \/productscience\/inference\/inference\/params \(chain REST\): error status \(HTTP 503\).*\[CHAIN_ERR_HTTP_STATUS\]\n$/,
    );
    expect(run.stderr).not.toContain(devnet.urls.chainRest);
  });

  it('a slow node query: CHAIN_ERR_TIMEOUT after the client timeout', async () => {
    devnet.faults.set({ nodeQuery: { delayMs: 2_000, match: '/v1/epochs/latest', remaining: 1 } });
    const err = await queryLatestEpoch(clientFor(devnet, { timeoutMs: 200 })).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isChainError(err, 'CHAIN_ERR_TIMEOUT')).toBe(true);
    expect((err as Error).message).toContain('GET /v1/epochs/latest (public API)');
  });
});
