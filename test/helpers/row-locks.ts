/**
 * Whether another transaction could take a row lock now: 'taken', or PostgreSQL's error code
 * ('55P03' when the row is locked in a conflicting mode). Each attempt has its own transaction,
 * since a refused one is aborted. FOR KEY SHARE is what a foreign-key check of an inserted row
 * takes on the row it references.
 */
import type { Knex } from 'knex';

export function tryRowLock(
  db: Knex,
  table: string,
  id: string,
  mode: 'UPDATE' | 'NO KEY UPDATE' | 'SHARE' | 'KEY SHARE',
): Promise<string> {
  return db
    .transaction((other) => other.raw(`SELECT id FROM ?? WHERE id = ? FOR ${mode} NOWAIT`, [table, id]))
    .then(
      () => 'taken',
      (error: { code?: string; message?: string }) => error.code ?? error.message ?? 'failed',
    );
}
