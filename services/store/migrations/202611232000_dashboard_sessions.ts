/**
 * The dashboard's sign-in sessions (issue #11), who requested each deployment, and the indexes
 * the dashboard's aggregate reads use: the latest deployment of a project × environment cell and
 * of a release × environment pair are each one index probe.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('dashboard_sessions', (t) => {
    t.text('id').primary();
    // sha256 of a 256-bit random token: the cookie's value is never stored.
    t.text('token_hash').notNullable().unique();
    t.text('service_account_id').notNullable().references('service_accounts.id');
    // The key signed in with: deleting it (or the account) ends its sessions too.
    t.text('api_key_id').notNullable().references('api_keys.id');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.index(['service_account_id']);
  });
  await knex.schema.alterTable('deployments', (t) => {
    // null: an automatic deployment (lifecycle trigger) or one created before this migration.
    t.text('requested_by_id');
    t.text('requested_by_name');
  });
  await knex.raw(
    'create index deployments_latest_per_cell on deployments (project_id, environment_id, created_at desc, id desc)',
  );
  await knex.raw(
    'create index deployments_latest_per_release_environment on deployments (release_id, environment_id, created_at desc, id desc)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists deployments_latest_per_release_environment');
  await knex.raw('drop index if exists deployments_latest_per_cell');
  await knex.schema.alterTable('deployments', (t) => {
    t.dropColumn('requested_by_name');
    t.dropColumn('requested_by_id');
  });
  await knex.schema.dropTableIfExists('dashboard_sessions');
}
