/**
 * Releases (immutable snapshots) and deployments with their tasks (step × machine) and logs
 * (spec §2.1–2.3, contract §4–5). PostgreSQL holds the truth: the engine's state lives here.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('releases', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('project_id').notNullable().references('projects.id');
    // Stored exactly as given (build metadata included); compared by SemVer precedence in code.
    t.text('version').notNullable();
    t.text('channel_id');
    t.text('channel_name');
    t.text('notes');
    t.jsonb('package_versions').notNullable().defaultTo('{}');
    t.jsonb('snapshot').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['project_id', 'version']);
    t.index(['project_id', 'created_at']);
  });

  // Orders deployment changes for `GET /api/deployment/list?changedAfterTick`.
  await knex.raw('create sequence deployment_change_seq');

  await knex.schema.createTable('deployments', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('project_id').notNullable().references('projects.id');
    t.text('release_id').notNullable().references('releases.id');
    t.text('environment_id').notNullable().references('environments.id');
    t.text('environment_name').notNullable();
    t.text('status').notNullable().defaultTo('Queued');
    t.boolean('automatic').notNullable().defaultTo(false);
    t.jsonb('exclude_step_names').notNullable().defaultTo('[]');
    t.text('machine_mode').notNullable().defaultTo('All');
    t.jsonb('machine_ids').notNullable().defaultTo('[]');
    t.boolean('redownload_packages').notNullable().defaultTo(false);
    t.timestamp('scheduled_for', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('cancellation_requested_at', { useTz: true });
    t.timestamp('last_update_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_attempt_at', { useTz: true });
    t.integer('error_count').notNullable().defaultTo(0);
    t.integer('warning_count').notNullable().defaultTo(0);
    // .NET ticks exceed 2^53: bigint here, BigInt in code, exact integers on the wire.
    t.bigInteger('last_log_tick').notNullable().defaultTo(0);
    t.bigInteger('change_tick').notNullable().defaultTo(knex.raw("nextval('deployment_change_seq')"));
    t.jsonb('plan');
    t.text('failure_message');
    // Which control-plane replica drives the deployment, until when (failover: another takes over after expiry).
    t.text('lease_owner');
    t.timestamp('lease_until', { useTz: true });
    t.index(['workspace_id', 'change_tick']);
    t.index(['release_id']);
    t.index(['status']);
  });
  // "Automatic environments deploy by themselves when their phase is reached, once each."
  await knex.raw(
    'create unique index deployments_automatic_once on deployments (release_id, environment_id) where automatic',
  );

  await knex.schema.createTable('deployment_tasks', (t) => {
    t.text('id').primary();
    t.text('deployment_id').notNullable().references('deployments.id');
    t.integer('stage_index').notNullable();
    t.text('step_id').notNullable();
    t.text('step_name').notNullable();
    t.text('machine_id');
    t.text('machine_name');
    t.text('status').notNullable().defaultTo('Pending');
    t.integer('exit_code');
    t.text('message');
    t.text('parent_log_id');
    t.timestamp('dispatched_at', { useTz: true });
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.integer('last_log_seq').notNullable().defaultTo(0);
    t.unique(['deployment_id', 'step_id', 'machine_id']);
  });

  await knex.schema.createTable('deployment_logs', (t) => {
    t.text('id').primary();
    t.text('deployment_id').notNullable().references('deployments.id');
    t.bigInteger('tick').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.text('level').notNullable();
    t.text('data').notNullable();
    t.text('exception_data');
    t.text('step_id');
    t.text('parent_log_id');
    t.text('task_id');
    // The agent's per-task line number: a batch re-sent after a reconnect is stored once.
    t.integer('agent_seq');
    t.unique(['deployment_id', 'tick']);
  });
  await knex.raw(
    'create unique index deployment_logs_agent_seq on deployment_logs (task_id, agent_seq) where agent_seq is not null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('deployment_logs');
  await knex.schema.dropTableIfExists('deployment_tasks');
  await knex.schema.dropTableIfExists('deployments');
  await knex.raw('drop sequence if exists deployment_change_seq');
  await knex.schema.dropTableIfExists('releases');
}
