// What the session benches (session-cost.ts, session-max-nonce.ts) measure the same way: a window of
// sequential inferences on a UserSession over in-process hosts, the session's CPU being the main
// thread's (and the whole process's, GC threads included) minus what the hosts' chat calls spend on
// the same thread.
import { readFileSync } from 'node:fs';
import type { UserSession } from '../src/session/user-session.js';
import type { InProcessNetwork } from '../src/testing/in-process-hosts.js';
import { request } from '../src/testing/session-setup.js';

/**
 * Lets the event loop reach its check phase, as the I/O of a real request does: the in-process hosts
 * answer in microtasks, and without this the session's background snapshot writer (snapshots.ts,
 * setImmediate turns) would never run.
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** CPU time of the main thread so far (ns, /proc schedstat); 0 where /proc has none. */
export function mainThreadNs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]!);
  } catch {
    return 0;
  }
}

/** CPU spent inside the hosts' chat calls since meterHosts (main thread ns, process µs). */
export interface HostMeter {
  mainNs: number;
  processUs: number;
}

/** Wraps `net.chat` to count the hosts' CPU apart; the hosts run on this thread. */
export function meterHosts(net: InProcessNetwork): HostMeter {
  const meter: HostMeter = { mainNs: 0, processUs: 0 };
  const chat = net.chat.bind(net);
  net.chat = async (...a: Parameters<InProcessNetwork['chat']>) => {
    const m0 = mainThreadNs();
    const c0 = process.cpuUsage();
    try {
      return await chat(...a);
    } finally {
      const c1 = process.cpuUsage(c0);
      meter.mainNs += mainThreadNs() - m0;
      meter.processUs += c1.user + c1.system;
    }
  };
  return meter;
}

export interface WindowCost {
  /** Session main-thread CPU per request, hosts' share subtracted. */
  readonly sessionMainUs: number;
  /** The same for the whole process (GC and other threads included). */
  readonly sessionProcessUs: number;
  /** Hosts' process CPU per request. */
  readonly hostUs: number;
  /** Wall time per request minus the hosts' busy time, median. */
  readonly wallP50Ms: number;
}

/** Runs `requests` sequential inferences and returns their cost; `afterEach` runs between them (clock). */
export async function measureWindow(
  session: UserSession,
  net: InProcessNetwork,
  meter: HostMeter,
  requests: number,
  afterEach: () => void = () => undefined,
): Promise<WindowCost> {
  let main = 0;
  let cpu = 0;
  const hostMain0 = meter.mainNs;
  const hostProcess0 = meter.processUs;
  const wall: number[] = [];
  for (let i = 0; i < requests; i++) {
    const input = request();
    const h0 = net.hostMs;
    const m0 = mainThreadNs();
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    await session.infer(input);
    wall.push(performance.now() - w0 - (net.hostMs - h0));
    const c1 = process.cpuUsage(c0);
    main += mainThreadNs() - m0;
    cpu += c1.user + c1.system;
    afterEach();
    await nextTurn();
  }
  const hostMainUs = (meter.mainNs - hostMain0) / 1_000 / requests;
  const hostUs = (meter.processUs - hostProcess0) / requests;
  const sorted = wall.sort((a, b) => a - b);
  return {
    sessionMainUs: Math.round(main / 1_000 / requests - hostMainUs),
    sessionProcessUs: Math.round(cpu / requests - hostUs),
    hostUs: Math.round(hostUs),
    wallP50Ms: Number(sorted[Math.floor(sorted.length / 2)]!.toFixed(2)),
  };
}
