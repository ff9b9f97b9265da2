/**
 * The topology (contract §2–§3). Identifiers are text so that any string a client sends is simply
 * "not found" rather than a type error. Names are unique among non-deleted siblings, case-insensitively.
 */
import type { Knex } from 'knex';

const now = (knex: Knex) => knex.fn.now();

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organizations', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.integer('max_parallel_machines').notNullable().defaultTo(8);
    t.integer('max_concurrent_deployments').notNullable().defaultTo(20);
    t.integer('max_queued_deployments').notNullable().defaultTo(1000);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });

  await knex.schema.createTable('workspaces', (t) => {
    t.text('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('name').notNullable();
    t.text('package_store_region');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw(
    'create unique index workspaces_name_uq on workspaces (organization_id, lower(name)) where deleted_at is null',
  );

  await knex.schema.createTable('service_accounts', (t) => {
    t.text('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('workspace_id').references('workspaces.id');
    t.text('name').notNullable();
    t.jsonb('roles').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('service_account_id').notNullable().references('service_accounts.id');
    // sha256 of a 256-bit random key: high-entropy secrets need no slow hash, and auth stays fast.
    t.text('key_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });

  await knex.schema.createTable('environments', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('description');
    t.integer('sort_order').notNullable().defaultTo(0);
    t.text('color');
    t.boolean('enabled').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw(
    'create unique index environments_name_uq on environments (workspace_id, lower(name)) where deleted_at is null',
  );

  await knex.schema.createTable('tags', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('color');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index tags_name_uq on tags (workspace_id, lower(name))');

  await knex.schema.createTable('machines', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.specificType('tag_ids', 'text[]').notNullable().defaultTo('{}');
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('registration_token_hash');
    t.timestamp('registration_expires_at', { useTz: true });
    t.text('agent_credential_hash');
    t.timestamp('last_seen_at', { useTz: true });
    t.text('agent_version');
    t.text('os');
    t.text('hostname');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index machines_name_uq on machines (workspace_id, lower(name))');

  await knex.schema.createTable('machine_environments', (t) => {
    t.text('machine_id').notNullable().references('machines.id').onDelete('CASCADE');
    t.text('environment_id').notNullable().references('environments.id');
    t.primary(['machine_id', 'environment_id']);
  });

  await knex.schema.createTable('lifecycles', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('description');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index lifecycles_name_uq on lifecycles (workspace_id, lower(name))');

  await knex.schema.createTable('lifecycle_phases', (t) => {
    t.text('id').primary();
    t.text('lifecycle_id').notNullable().references('lifecycles.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.integer('sort_order').notNullable();
    t.text('progress_requirement').notNullable().defaultTo('AllMustComplete');
    t.text('progress_requirement_error_mode').notNullable().defaultTo('NoErrorsAllowWarnings');
    t.integer('progress_requirement_count').notNullable().defaultTo(0);
  });

  await knex.schema.createTable('phase_environments', (t) => {
    t.text('phase_id').notNullable().references('lifecycle_phases.id').onDelete('CASCADE');
    t.text('environment_id').notNullable().references('environments.id');
    t.text('how_to_trigger').notNullable().defaultTo('Manual');
    t.primary(['phase_id', 'environment_id']);
  });

  await knex.schema.createTable('projects', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('description');
    t.text('lifecycle_id').references('lifecycles.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw(
    'create unique index projects_name_uq on projects (workspace_id, lower(name)) where deleted_at is null',
  );

  await knex.schema.createTable('channels', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id');
    t.text('name').notNullable();
    t.text('description');
    t.text('lifecycle_id').references('lifecycles.id');
    t.boolean('is_default').notNullable().defaultTo(false);
    t.text('version_range');
    t.text('pre_release_tag');
    t.jsonb('package_rules').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index channels_name_uq on channels (project_id, lower(name))');
  await knex.raw('create unique index channels_default_uq on channels (project_id) where is_default');

  await knex.schema.createTable('step_templates', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('description');
    t.text('script').notNullable().defaultTo('');
    t.text('script_language').notNullable();
    t.jsonb('supported_run_modes').notNullable().defaultTo('["TargetMachine"]');
    t.text('properties_raw').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw(
    'create unique index step_templates_name_uq on step_templates (workspace_id, lower(name)) where deleted_at is null',
  );

  await knex.schema.createTable('rolling_groups', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id');
    t.text('name').notNullable();
    t.integer('window_size').notNullable().defaultTo(1);
    t.text('machine_order').notNullable().defaultTo('MachineName');
    t.jsonb('machine_order_tag_ids').notNullable().defaultTo('[]');
    t.boolean('wait_between_machine_groups').notNullable().defaultTo(false);
    t.text('on_machine_failure').notNullable().defaultTo('StopStep');
    t.text('on_member_failure').notNullable().defaultTo('SkipRestOnThisMachine');
    t.text('on_no_targets').notNullable().defaultTo('Skip');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });

  await knex.schema.createTable('project_steps', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id');
    t.text('name').notNullable();
    t.text('description');
    t.text('step_template_id').notNullable().references('step_templates.id');
    t.integer('sort_order').notNullable();
    t.text('run_mode');
    t.text('error_action').notNullable().defaultTo('Stop');
    t.boolean('disabled').notNullable().defaultTo(false);
    t.integer('parallel_machines');
    t.jsonb('environment_ids').notNullable().defaultTo('[]');
    t.jsonb('machine_id_filter').notNullable().defaultTo('[]');
    t.jsonb('machine_tag_filter').notNullable().defaultTo('[]');
    t.text('properties_json').notNullable().defaultTo('{}');
    t.text('rolling_group_id').references('rolling_groups.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index project_steps_name_uq on project_steps (project_id, lower(name))');

  // Project variables have project_id set; workspace variables have it null.
  await knex.schema.createTable('variables', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('project_id').references('projects.id');
    t.text('name').notNullable();
    t.text('description');
    t.text('variable_type').notNullable().defaultTo('Text');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw(
    "create unique index variables_name_uq on variables (workspace_id, coalesce(project_id, ''), lower(name)) where deleted_at is null",
  );

  await knex.schema.createTable('variable_values', (t) => {
    t.text('id').primary();
    t.text('variable_id').notNullable().references('variables.id');
    // Exactly one of these holds the value: plain for Text, AES-256-GCM ciphertext for Sensitive.
    t.text('value_plain');
    t.text('value_encrypted');
    t.jsonb('environments_filter').notNullable().defaultTo('[]');
    t.jsonb('machine_filter').notNullable().defaultTo('[]');
    t.jsonb('tag_filter').notNullable().defaultTo('[]');
    t.jsonb('step_filter').notNullable().defaultTo('[]');
    t.jsonb('channel_filter').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
    t.timestamp('deleted_at', { useTz: true });
  });

  await knex.schema.createTable('project_workspace_variables', (t) => {
    t.text('project_id').notNullable().references('projects.id');
    t.text('variable_id').notNullable().references('variables.id');
    t.primary(['project_id', 'variable_id']);
  });

  await knex.schema.createTable('script_modules', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('description');
    t.text('script').notNullable().defaultTo('');
    t.text('script_language').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index script_modules_name_uq on script_modules (workspace_id, lower(name))');

  await knex.schema.createTable('project_script_modules', (t) => {
    t.text('project_id').notNullable().references('projects.id');
    t.text('script_module_id').notNullable().references('script_modules.id').onDelete('CASCADE');
    t.primary(['project_id', 'script_module_id']);
  });

  await knex.schema.createTable('feeds', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('feed_type').notNullable();
    t.text('url');
    t.boolean('is_builtin').notNullable().defaultTo(false);
    t.text('config_encrypted');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index feeds_name_uq on feeds (workspace_id, lower(name))');

  await knex.schema.createTable('cloud_accounts', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('account_type').notNullable();
    t.text('config_encrypted').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now(knex));
  });
  await knex.raw('create unique index cloud_accounts_name_uq on cloud_accounts (workspace_id, lower(name))');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'cloud_accounts',
    'feeds',
    'project_script_modules',
    'script_modules',
    'project_workspace_variables',
    'variable_values',
    'variables',
    'project_steps',
    'rolling_groups',
    'step_templates',
    'channels',
    'projects',
    'phase_environments',
    'lifecycle_phases',
    'lifecycles',
    'machine_environments',
    'machines',
    'tags',
    'environments',
    'api_keys',
    'service_accounts',
    'workspaces',
    'organizations',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
