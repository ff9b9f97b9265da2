// Reconnect delays: exponential with FULL jitter (a random delay between 0 and the exponential
// ceiling), so a fleet of agents that lost the same replica does not reconnect in lock-step.

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000 };

/** Delay before reconnect attempt `attempt` (0-based). */
export function backoffDelayMs(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(random() * ceiling);
}
