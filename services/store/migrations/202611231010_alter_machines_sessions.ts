/**
 * Which agent session is a machine's current one, and since when the machine has had none: a
 * session that ends marks the machine offline at once (its deployments say so), unless a newer
 * session of the same machine — on any replica — already replaced it.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.text('session_id');
    t.timestamp('disconnected_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.dropColumn('disconnected_at');
    t.dropColumn('session_id');
  });
}
