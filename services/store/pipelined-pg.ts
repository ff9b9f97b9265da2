/**
 * knex's PostgreSQL client on pipelined connections, with a transaction's BEGIN not waited for.
 *
 * Why: under load each round trip to PostgreSQL costs a turn of a busy event loop, not
 * PostgreSQL's time (bench/README: a release create under bench/throughput's pollers). knex sends
 * BEGIN and waits for its answer before the transaction's first statement; node-postgres in
 * pipeline mode (8.23) writes a query without waiting for the one before it, so BEGIN and the first
 * statement leave together and a transaction costs one round trip less.
 *
 * Safe because PostgreSQL runs a connection's messages in order: the first statement runs after
 * BEGIN, inside the transaction. BEGIN fails only with its connection, or on one left in an aborted
 * transaction; the statements after it then fail too, and knex rejects the transaction with
 * BEGIN's error, as before. Pipeline mode refuses cursors and streamed results (`rows`), which
 * nothing here uses.
 */
import { createRequire } from 'node:module';
import type { Knex } from 'knex';

const require = createRequire(import.meta.url);

interface TransactionBase {
  begin(connection: unknown): Promise<unknown>;
}
type TransactionClass = new (...args: unknown[]) => TransactionBase;
type ClientClass = new (config: Knex.Config) => { transaction(...args: unknown[]): unknown };

// knex's own classes (no typings: knex exports only its factory's).
const PgClient = require('knex/lib/dialects/postgres/index.js') as ClientClass;
const PgTransaction = require('knex/lib/dialects/postgres/execution/pg-transaction.js') as TransactionClass;

class PipelinedTransaction extends PgTransaction {
  override begin(connection: unknown): Promise<unknown> {
    // Written now; its failure still rejects the transaction (knex's query handler for it does).
    void super.begin(connection).catch(() => undefined);
    return Promise.resolve();
  }
}

export class PipelinedPgClient extends PgClient {
  override transaction(...args: unknown[]): unknown {
    return new PipelinedTransaction(this, ...args);
  }
}
