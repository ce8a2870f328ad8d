// The served-bytes verdict over in-process hosts: honest frames match the Finish, a Finish hashing
// other bytes is a mismatch, and the verdict is counted per executor and reported with both hashes.
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { request, setup } from '../testing/session-setup.js';
import { ServedBytes, servedVerdict } from './served-bytes.js';

const enc = new TextEncoder();

describe('served bytes vs the Finish', () => {
  it('hashes frames as line + blank line and grades match / truncated / mismatch', () => {
    const lines = ['data: {"a":1}', 'data: {"b":2}'];
    const claimed = sha256(enc.encode(lines.map((l) => `${l}\n\n`).join('')));
    const full = new ServedBytes();
    for (const l of lines) full.chunk(enc.encode(l));
    full.done();
    expect(servedVerdict(full, claimed, false)).toBe('match');
    const cut = new ServedBytes();
    cut.chunk(enc.encode(lines[0]!));
    expect(servedVerdict(cut, claimed, true)).toBe('truncated');
    expect(servedVerdict(cut, claimed, false)).toBe('truncated'); // no [DONE]
    cut.done();
    expect(servedVerdict(cut, claimed, false)).toBe('mismatch');
    expect(cut.bytes).toBe(lines[0]!.length + 2);
  });

  it('reports each inference and counts per executor', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const honest = await s.infer(request());
    expect(honest.served).toBe('match');
    const liar = t.net.hostOfSlot(2);
    liar.behaviour.tamperFinish = true;
    const lied = await s.infer(request());
    expect(lied).toMatchObject({ executor: liar.address, finished: true, served: 'mismatch' });
    expect(s.servedCounts().get(liar.address)).toEqual({ match: 0, mismatch: 1, truncated: 0 });
    const event = t.events.find((e) => e.type === 'served_bytes' && e.inferenceId === lied.nonce);
    expect(event).toMatchObject({ host: liar.address, verdict: 'mismatch' });
  });
});
