import { describe, expect, it } from 'vitest';
import { InferenceStatus } from '../state/types.js';
import { advanceTo, keyN, request, setup } from '../testing/session-setup.js';

describe('timeouts by votes (§7.4)', () => {
  it('times out a refusing executor and returns the reservation to the balance', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const refuser = t.net.hostOfSlot(2);
    refuser.behaviour.refuse = true;
    await advanceTo(s, refuser.slots);
    const r = await s.infer(request(200n));
    expect(r).toMatchObject({ status: 'failed', confirmed: false, finished: false });
    const record = s.state.inferences.get(r.nonce)!;
    expect(record.status).toBe(InferenceStatus.Pending);
    expect(record.reservedCost).toBe((30n + 200n) * 10n);
    const balance = s.balance;

    expect(await s.checkTimeouts()).toEqual([]); // deadline not reached
    t.clock.advance(60);
    expect(await s.checkTimeouts()).toEqual([]); // clock-skew margin
    t.clock.advance(5);
    const [outcome, ...rest] = await s.checkTimeouts();
    expect(rest).toEqual([]);
    expect(outcome).toMatchObject({ inferenceId: r.nonce, reason: 'refused', outcome: 'applied' });
    expect(outcome!.acceptWeight).toBeGreaterThan(s.state.config.voteThreshold);
    // The executor was never asked to vote; one request per other address at most.
    expect(t.net.verifyCalls.every((c) => c.host !== refuser.address)).toBe(true);
    expect(new Set(t.net.verifyCalls.map((c) => c.host)).size).toBe(t.net.verifyCalls.length);

    expect(s.state.inferences.get(r.nonce)?.status).toBe(InferenceStatus.TimedOut);
    expect(s.balance).toBe(balance + record.reservedCost - 1_000n); // refund minus the timeout diff's fee
    expect(s.state.hostStats[r.executorSlot]!.missed).toBe(1);
    for (const h of t.net.hosts.keys()) await s.catchUpHost(h);
    expect(t.net.allAt(s.state)).toBe(true);
    expect(await s.checkTimeouts()).toEqual([]);
  });

  it('retries later when the votes do not reach the threshold', async () => {
    const t = setup();
    await t.init();
    const s = await t.open({ timeoutRetrySeconds: 30n });
    const refuser = t.net.hostOfSlot(2);
    refuser.behaviour.refuse = true;
    await advanceTo(s, refuser.slots);
    const r = await s.infer(request());
    // Three of four voters unreachable: at most 4 slots accept, threshold is 8.
    for (const slot of [1, 3, 4]) t.net.hostOfSlot(slot).behaviour.down = true;
    t.clock.advance(65);
    expect(await s.checkTimeouts()).toMatchObject([{ inferenceId: r.nonce, outcome: 'insufficient_votes' }]);
    expect(await s.checkTimeouts()).toEqual([]); // waiting for the retry time
    for (const slot of [1, 3, 4]) t.net.hostOfSlot(slot).behaviour.down = false;
    t.clock.advance(30);
    expect(await s.checkTimeouts()).toMatchObject([{ inferenceId: r.nonce, outcome: 'applied' }]);
  });

  it('does not count votes whose signature is not the voter slot key', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const refuser = t.net.hostOfSlot(2);
    refuser.behaviour.refuse = true;
    // Hosts of slots 0 and 1 (4 + 3 slots) forge: 3 + 3 honest slots remain, threshold 8.
    t.net.hostOfSlot(0).behaviour.voteKey = keyN(900);
    t.net.hostOfSlot(1).behaviour.voteKey = keyN(901);
    await advanceTo(s, refuser.slots);
    const r = await s.infer(request());
    t.clock.advance(65);
    expect(await s.checkTimeouts()).toMatchObject([
      { inferenceId: r.nonce, outcome: 'insufficient_votes', acceptWeight: 6 },
    ]);
    expect(s.state.inferences.get(r.nonce)?.status).toBe(InferenceStatus.Pending);
  });

  it('times out a stalled execution after execution_timeout from confirmed_at', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const staller = t.net.hostOfSlot(3);
    staller.behaviour.stall = true;
    await advanceTo(s, staller.slots);
    const r = await s.infer(request());
    expect(r).toMatchObject({ status: 'failed', confirmed: true, finished: false });
    expect(r.error?.message).toContain('truncated_execution');
    await s.flush(); // the Confirm: Pending → Started
    const record = s.state.inferences.get(r.nonce)!;
    expect(record.status).toBe(InferenceStatus.Started);
    const balance = s.balance;

    t.clock.advance(1_920);
    expect(await s.checkTimeouts()).toEqual([]);
    t.clock.advance(5);
    expect(await s.checkTimeouts()).toMatchObject([
      { inferenceId: r.nonce, reason: 'execution', outcome: 'applied' },
    ]);
    expect(s.state.inferences.get(r.nonce)?.status).toBe(InferenceStatus.TimedOut);
    expect(s.balance).toBe(balance + record.reservedCost - 1_000n);
    for (const h of t.net.hosts.keys()) await s.catchUpHost(h);
    expect(t.net.allAt(s.state)).toBe(true);
  });

  it('does not time out an execution whose Finish the executor holds', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const host = t.net.hostOfSlot(3);
    await advanceTo(s, host.slots);
    const r = await s.infer(request());
    expect(r.finished).toBe(true);
    t.clock.advance(3_000);
    expect(await s.checkTimeouts()).toEqual([]); // the Finish is queued: nothing to vote on
    await s.flush();
    expect(s.state.inferences.get(r.nonce)?.status).toBe(InferenceStatus.Finished);
  });
});
