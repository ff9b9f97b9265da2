/**
 * A running control plane says so to the others: one connection of its own holds the presence
 * lock shared for as long as the process runs. A master key rotation takes the lock exclusively
 * (master-key-check.ts), so it refuses to run beside a replica that would go on sealing with the
 * old key, and a replica starting meanwhile waits at its start until the rotation has ended (then
 * its key is checked against the new one).
 *
 * Its own connection, not one of the pool's: a session lock lives as long as its connection, and
 * the pool hands connections out and closes idle ones. When PostgreSQL drops it (a restart, a
 * failover) the lock goes with it, and it is taken again once PostgreSQL is back.
 */
import os from 'node:os';
import pg from 'pg';
import { toError, type Logger } from '../core/index.ts';
import { REPLICA_PRESENCE_LOCK_KEY } from './master-key-check.ts';

export interface ReplicaPresence {
  stop(): Promise<void>;
}

const RETRY_MS = [500, 1_000, 2_000, 5_000];

/** What a rotation refused beside this replica names it by (pg_stat_activity.application_name, 63 bytes). */
function presenceName(): string {
  return `gantry control plane ${os.hostname()} pid ${process.pid}`.slice(0, 63);
}

/** Resolves once the lock is held (waiting, if a rotation holds it, until the rotation ends). */
export async function holdReplicaPresence(url: string, logger: Logger): Promise<ReplicaPresence> {
  let stopped = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  const take = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url, application_name: presenceName() });
    const lost = (error?: Error) => {
      if (client !== next || stopped) return;
      logger.warn(
        error ? { err: toError(error) } : {},
        'the replica presence connection to PostgreSQL broke: taking it again',
      );
      client = null;
      next.end().catch(() => undefined);
      again(0);
    };
    // Without a listener an error on an idle client is thrown as an uncaught exception.
    next.on('error', lost);
    next.on('end', () => lost());
    await next.connect();
    try {
      await next.query('select pg_advisory_lock_shared($1)', [REPLICA_PRESENCE_LOCK_KEY]);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    // Stopped while it was being taken: let it go at once.
    if (stopped) await next.end().catch(() => undefined);
    else client = next;
  };

  const again = (attempt: number) => {
    if (stopped) return;
    retry = setTimeout(
      () => {
        retry = null;
        take().catch((error: unknown) => {
          logger.warn({ err: toError(error) }, 'the replica presence lock not taken yet: PostgreSQL unreachable');
          again(attempt + 1);
        });
      },
      RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)],
    );
    retry.unref();
  };

  await take();
  return {
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      const last = client;
      client = null;
      // Closing the connection releases the lock.
      await last?.end().catch(() => undefined);
    },
  };
}
