/**
 * One row: the check of the master key the installation's Sensitive values are sealed with
 * (core/secret-box.ts masterKeyCheck), so that a replica started with another key refuses to
 * start instead of sealing new values that the others cannot open.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table master_key_check (
      id smallint primary key default 1 check (id = 1),
      key_check text not null,
      created_at timestamptz not null default now()
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('master_key_check');
}
