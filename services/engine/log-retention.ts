/**
 * The log retention policy (GANTRY_LOG_RETENTION_DAYS): a finished deployment's log is removed
 * once it completed that many days ago, one line saying so in its place; the deployment itself,
 * its status, error and warning counts and its tasks stay, so the dashboard, the CLI and the API
 * still show what ran where and how it ended. Without it the database only grows (a 5M-line log is
 * a normal build's).
 *
 * Every replica sweeps; each removal locks its deployment's row (skipped by the others) in a
 * transaction of its own, one deployment at a time, so a sweep never holds locks for long nor
 * removes a log twice.
 */
import { toError, type Clock, type Logger } from '../core/index.ts';
import type { Store } from '../store/index.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
/** A sweep every hour (the first a minute after start): retention counts in days. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;
const FIRST_SWEEP_MS = 60 * 1000;
/** Logs removed per sweep at most: a first sweep over years of history spreads over hours. */
const MAX_PER_SWEEP = 1_000;

export interface LogRetentionOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  days: number;
  /** After each removal commits: followers and read caches on every replica learn the log changed. */
  onRemoved?: (deploymentId: string) => void;
}

/** Removes the logs past retention, oldest first, up to `max`; how many deployments' logs it removed. */
export async function removeExpiredLogs(
  options: Omit<LogRetentionOptions, 'logger'>,
  max = MAX_PER_SWEEP,
): Promise<{ deployments: number; lines: number }> {
  const { store, clock, days, onRemoved } = options;
  const line = {
    level: 'Information' as const,
    data: `This deployment's log was removed ${days} day${days === 1 ? '' : 's'} after it finished (GANTRY_LOG_RETENTION_DAYS); its status, counts and tasks are kept`,
  };
  let deployments = 0;
  let lines = 0;
  while (deployments < max) {
    const now = clock.now();
    const cutoff = new Date(now.getTime() - days * DAY_MS);
    const removed = await store.transaction((tx) => tx.deploymentLogs.removeOldestLogBefore(cutoff, now, line));
    if (!removed) break;
    onRemoved?.(removed.deploymentId);
    deployments++;
    lines += removed.removedLines;
  }
  return { deployments, lines };
}

/** Sweeps every hour until stopped. */
export function startLogRetention(options: LogRetentionOptions): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const sweep = () => {
    running = removeExpiredLogs(options)
      .then(({ deployments, lines }) => {
        if (deployments > 0)
          options.logger.info({ deployments, lines, days: options.days }, 'deployment logs past retention removed');
      })
      .catch((error: unknown) => {
        // The next sweep tries again: a database outage must not end the policy.
        options.logger.warn({ err: toError(error) }, 'removing deployment logs past retention failed');
      })
      .finally(() => {
        running = null;
        if (!stopped) schedule(SWEEP_EVERY_MS);
      });
  };
  const schedule = (ms: number) => {
    timer = setTimeout(sweep, ms);
    timer.unref();
  };
  schedule(FIRST_SWEEP_MS);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
