/**
 * The knex handle every store module receives. `Db` is either the root handle or a transaction,
 * so any store call can join a caller's transaction.
 */
import knex, { type Knex } from 'knex';
import pg from 'pg';
import { PipelinedPgClient } from './pipelined-pg.ts';

export type Db = Knex | Knex.Transaction;

/*
 * Prepared statements: a statement given `.options({ name: 'gantry_…' })` is server-side
 * prepared. PostgreSQL parses and plans an unnamed statement at every execution (on a
 * deployment's path 0.1–0.5 ms of its CPU for each, against about as much or less to run it:
 * pg_stat_statements, bench/README, twenty-ninth session); a connection keeps a prepared
 * statement's plan. Named only: statements whose text never changes (each variant its own name);
 * that list their columns (after a migration adds a column, a prepared `*` fails with "cached plan
 * must not change result type"); whose constants are in the text, so that a generic plan
 * estimates a status filter as a custom plan would; whose plan does not depend on how many rows a
 * parameter selects (an environment's machines, 10 or 10,000, are read unnamed). A name stays
 * within 63 bytes: PostgreSQL keeps no more, so two names alike that far are one statement.
 * test/services/store/prepared-statements.test.ts holds these rules.
 */

// int8 (bigint) stays a string from pg; ticks are converted with BigInt() where they are read.
// Counts come back as strings too: store code converts them with Number().
export function createDb(
  url: string,
  options: { poolMax?: number; log?: { warn: (message: string) => void; error: (message: string) => void } } = {},
): Knex {
  return knex({
    client: PipelinedPgClient as unknown as typeof Knex.Client,
    // pg parses the URL itself (knex's own parser drops `?host=/socket/dir`, the embedded default's).
    // Pipelined: a query is written without waiting for the one before it (pipelined-pg.ts).
    connection: { connectionString: url, pipeline: true } as Knex.PgConnectionConfig,
    pool: { min: 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: 10_000,
    // knex writes its own warnings ("Acquire connection error: …" while PostgreSQL is down) to the
    // console unless given a logger: they belong in the structured log like everything else.
    ...(options.log
      ? {
          log: {
            warn: options.log.warn,
            error: options.log.error,
            deprecate: (method: string, alternative: string) =>
              options.log!.warn(`knex: ${method} is deprecated, use ${alternative}`),
            debug: () => undefined,
          },
        }
      : {}),
  });
}

/**
 * Starts a statement and resolves as soon as it is written to its connection, with `answered`
 * settling on PostgreSQL's answer, which the caller must await. On a pipelined connection
 * (pipelined-pg.ts) what is sent next on it, a transaction's COMMIT, then leaves at once behind
 * it: a round trip less. PostgreSQL runs the two in order, and a COMMIT after a statement that
 * failed rolls the transaction back. A statement that fails before it is sent (a finished
 * transaction, a bad binding) rejects here, so the caller's transaction is rolled back.
 */
export async function sendWithoutWaiting<T = unknown>(
  statement: Knex.QueryBuilder | Knex.Raw<T>,
): Promise<{ answered: Promise<T> }> {
  // knex emits 'query' in the same synchronous step that hands the statement to node-postgres.
  const sent = new Promise<void>((resolve) => {
    statement.on('query', () => resolve());
  });
  const answered = Promise.resolve(statement as PromiseLike<T>);
  await Promise.race([sent, answered]);
  return { answered };
}

/** True for PostgreSQL's unique_violation, so a lost race on a unique name becomes a 400, not a 500. */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === '23505';
}

/** True for foreign_key_violation: a row still referenced elsewhere, or a reference to a row that vanished. */
export function isForeignKeyViolation(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === '23503';
}

/**
 * PostgreSQL error classes that mean "the server cannot take this now", not "this query is
 * wrong": 08 connection exceptions, 53 insufficient resources, 57P01–57P03 shutdown/starting up.
 */
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[123])/;
const UNAVAILABLE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/**
 * True when a failure is the database being unreachable or restarting (a retry later may work),
 * so the API can answer 503 with Retry-After instead of 500. Covers a refused or dropped
 * connection, PostgreSQL's own "shutting down"/"starting up", and knex giving up on the pool.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const { code, name, message, errors } = current as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      errors?: unknown;
    };
    if (
      typeof code === 'string' &&
      (UNAVAILABLE_SOCKET.has(code) || (current instanceof pg.DatabaseError && UNAVAILABLE_SQLSTATE.test(code)))
    )
      return true;
    if (name === 'KnexTimeoutError') return true;
    if (
      typeof message === 'string' &&
      /Connection terminated|connection (is closed|ended)|Client has encountered a connection error/i.test(message)
    )
      return true;
    // Node reports a refused connection to several addresses as an AggregateError.
    if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** One round trip to PostgreSQL (readiness): throws when it cannot be reached. */
export async function pingDatabase(db: Db): Promise<void> {
  await db.raw('select 1');
}
