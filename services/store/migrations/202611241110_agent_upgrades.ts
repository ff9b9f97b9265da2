/**
 * Agent upgrades from the control plane (issue #17, POST /api/machine/upgrade): the version a
 * machine's agent was asked to upgrade to and what became of it (Requested, Started, Succeeded,
 * Failed with the agent's reason). Null until an upgrade is asked for.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.text('upgrade_version');
    t.text('upgrade_state');
    t.text('upgrade_message');
    t.timestamp('upgrade_updated_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.dropColumn('upgrade_updated_at');
    t.dropColumn('upgrade_message');
    t.dropColumn('upgrade_state');
    t.dropColumn('upgrade_version');
  });
}
