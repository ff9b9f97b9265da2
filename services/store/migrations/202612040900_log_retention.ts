/**
 * When a finished deployment's log was removed by the retention policy (GANTRY_LOG_RETENTION_DAYS,
 * engine/log-retention.ts), and the index its sweep reads: the oldest finished deployments whose
 * log is still there, so each sweep reads a few rows however many deployments are kept.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table deployments add column logs_removed_at timestamptz');
  await knex.raw(
    'create index deployments_log_retention on deployments (completed_at) where logs_removed_at is null and completed_at is not null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists deployments_log_retention');
  await knex.raw('alter table deployments drop column if exists logs_removed_at');
}
