/**
 * Steps and rolling groups: rolling-group names are unique within a project (like every other
 * sibling name), and the lookups that step ordering and template-usage checks run are indexed.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create unique index rolling_groups_name_uq on rolling_groups (project_id, lower(name))');
  await knex.raw('create index project_steps_project_order_ix on project_steps (project_id, sort_order)');
  await knex.raw('create index project_steps_template_ix on project_steps (step_template_id)');
  await knex.raw(
    'create index project_steps_group_ix on project_steps (rolling_group_id) where rolling_group_id is not null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists project_steps_group_ix');
  await knex.raw('drop index if exists project_steps_template_ix');
  await knex.raw('drop index if exists project_steps_project_order_ix');
  await knex.raw('drop index if exists rolling_groups_name_uq');
}
