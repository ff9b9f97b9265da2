/**
 * Phase names are unique (case-insensitively) within a lifecycle, so `phaseName` on deploy and
 * promote always names exactly one phase. The domain checks it too; this index closes the race.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create unique index lifecycle_phases_name_uq on lifecycle_phases (lifecycle_id, lower(name))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists lifecycle_phases_name_uq');
}
