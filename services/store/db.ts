/**
 * The knex handle every store module receives. `Db` is either the root handle or a transaction,
 * so any store call can join a caller's transaction.
 */
import knex, { type Knex } from 'knex';
import pg from 'pg';

export type Db = Knex | Knex.Transaction;

// int8 (bigint) stays a string from pg; ticks are converted with BigInt() where they are read.
// Counts come back as strings too: store code converts them with Number().
export function createDb(url: string, options: { poolMax?: number } = {}): Knex {
  return knex({
    client: 'pg',
    // pg parses the URL itself (knex's own parser drops `?host=/socket/dir`, the embedded default's).
    connection: { connectionString: url },
    pool: { min: 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: 10_000,
  });
}

/** True for PostgreSQL's unique_violation, so a lost race on a unique name becomes a 400, not a 500. */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === '23505';
}

/** True for foreign_key_violation: a row still referenced elsewhere, or a reference to a row that vanished. */
export function isForeignKeyViolation(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === '23503';
}
