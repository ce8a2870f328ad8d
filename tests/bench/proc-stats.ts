// What a benchmarked process costs, read from /proc (Linux): CPU time per thread, resident memory
// and write syscalls.
// Holds under load, where a sampling profiler starves, and needs nothing inside the process measured.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** µs per clock tick of /proc's utime and stime. */
export const TICK_US =
  1e6 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

/** utime + stime of every thread of `pid`, in clock ticks (/proc/<pid>/task/<tid>/stat fields 14, 15). */
export function threadTicks(pid: number): Map<string, { user: number; sys: number }> {
  const out = new Map<string, { user: number; sys: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      out.set(tid, { user: Number(fields[11]), sys: Number(fields[12]) });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** utime + stime of the whole process `pid` (every thread, ended ones included), in µs. */
export function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** Resident set size of `pid` in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? Number.NaN) * 1024;
}

/** Write syscalls `pid` has made (syscw of /proc/<pid>/io): socket writes to clients, Postgres, Redis. */
export function writeSyscalls(pid: number): number {
  const n = /^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1];
  return Number(n ?? Number.NaN);
}
