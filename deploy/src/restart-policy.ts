// When ./start brings a dead process back (README, "What `./start` gives you"): a replica that dies
// is logged and restarted after a moment while the other keeps serving. The delay doubles with each
// exit inside a minute so a process that crashes at once does not spin, and a configuration error
// (exit 78, README "Configuration") or a crash loop stops the demo with the process's last lines
// instead.

/** Exit status of a configuration error (packages/shared runService): restarting cannot help. */
export const CONFIG_ERROR_EXIT = 78;

export interface RestartPolicy {
  /** First delay (ms); doubled per recent exit up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Exits inside windowMs that count as a crash loop. */
  maxExitsInWindow: number;
  windowMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  baseDelayMs: 1_000,
  maxDelayMs: 8_000,
  maxExitsInWindow: 5,
  windowMs: 60_000,
};

export type RestartDecision = { action: 'restart'; delayMs: number } | { action: 'give_up'; reason: string };

/**
 * Decides what to do with a process that exited with `code` at `now`, given the times of its
 * earlier exits (pruned and appended in place).
 */
export function decideRestart(
  code: number | string,
  exits: number[],
  now: number,
  policy: RestartPolicy = DEFAULT_RESTART_POLICY,
): RestartDecision {
  if (code === CONFIG_ERROR_EXIT) return { action: 'give_up', reason: 'configuration error (exit 78)' };
  while (exits.length > 0 && exits[0]! <= now - policy.windowMs) exits.shift();
  exits.push(now);
  if (exits.length > policy.maxExitsInWindow) {
    return {
      action: 'give_up',
      reason: `exited ${exits.length} times within ${policy.windowMs / 1000} s`,
    };
  }
  const delayMs = Math.min(policy.baseDelayMs * 2 ** (exits.length - 1), policy.maxDelayMs);
  return { action: 'restart', delayMs };
}
