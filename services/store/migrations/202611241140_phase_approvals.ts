/**
 * Approvals a lifecycle phase environment requires (issue #15): beside the environment's own
 * requiredApprovals, the higher of the two applies to a deployment of a release of that lifecycle.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phase_environments', (t) => {
    // null: the phase environment adds no requirement of its own (0 is stored as null).
    t.integer('required_approvals');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phase_environments', (t) => {
    t.dropColumn('required_approvals');
  });
}
