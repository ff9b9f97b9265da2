/**
 * Machine health (issue #17): what the agent last reported about its host — the script
 * interpreters on its PATH and the bytes free in its home. Null until an agent that reports them
 * connects (older agents never do).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.specificType('interpreters', 'text[]');
    t.bigInteger('home_free_bytes');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.dropColumn('home_free_bytes');
    t.dropColumn('interpreters');
  });
}
