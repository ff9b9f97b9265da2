/**
 * Release governance (issue #15): approvals an environment requires, deployment freezes, rollbacks,
 * and why a deployment waits. Only additions: the spec's columns and statuses are unchanged.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environments', (t) => {
    // 0: deployments to it start without approval.
    t.integer('required_approvals').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('deployments', (t) => {
    // A gated deployment stays Queued until the engine has checked its approvals and freezes
    // (the claim that starts validation skips it); gate_recheck_at: when the engine looks again
    // (null: only an approval wakes it).
    t.boolean('gated').notNullable().defaultTo(false);
    t.timestamp('gate_recheck_at', { useTz: true });
    t.text('waiting_reason');
    // Taken from the environment when the deployment is created: changing the setting later
    // does not move deployments already waiting.
    t.integer('required_approvals').notNullable().defaultTo(0);
    t.text('freeze_override_reason');
    // A rollback: the release the environment was rolled back from.
    t.text('rolled_back_from_release_id');
  });
  await knex.raw(
    "create index deployments_gate_recheck on deployments (gate_recheck_at) where gated and status = 'Queued'",
  );
  await knex.schema.createTable('deployment_approvals', (t) => {
    t.text('id').primary();
    t.text('deployment_id').notNullable().references('deployments.id');
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('account_id').notNullable();
    t.text('account_name').notNullable();
    t.text('decision').notNullable(); // Approved | Rejected
    t.text('comment');
    t.timestamp('created_at', { useTz: true }).notNullable();
    // One decision per account and deployment: "distinct accounts approve".
    t.unique(['deployment_id', 'account_id']);
  });
  await knex.schema.createTable('deployment_freezes', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('description');
    // A single window (start and end) or a recurrence (cron, duration, time zone); one of the two.
    t.timestamp('start_at', { useTz: true });
    t.timestamp('end_at', { useTz: true });
    t.text('recurrence_cron');
    t.integer('recurrence_duration_minutes');
    t.text('recurrence_time_zone');
    t.specificType('environment_ids', 'text[]').notNullable();
    // Empty: every project.
    t.specificType('project_ids', 'text[]').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('deleted_at', { useTz: true });
    t.index(['workspace_id']);
  });
  await knex.raw(
    'create unique index deployment_freezes_name on deployment_freezes (workspace_id, lower(name)) where deleted_at is null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('deployment_freezes');
  await knex.schema.dropTable('deployment_approvals');
  await knex.raw('drop index if exists deployments_gate_recheck');
  await knex.schema.alterTable('deployments', (t) => {
    t.dropColumn('rolled_back_from_release_id');
    t.dropColumn('freeze_override_reason');
    t.dropColumn('required_approvals');
    t.dropColumn('waiting_reason');
    t.dropColumn('gate_recheck_at');
    t.dropColumn('gated');
  });
  await knex.schema.alterTable('environments', (t) => t.dropColumn('required_approvals'));
}
