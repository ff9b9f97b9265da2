/**
 * deployments.advance_seq counts the claims of a deployment (issue #20). A replica that keeps a
 * wide deployment's task statuses in memory between its advances trusts them only when the claim
 * it holds follows its own last one (no other replica advanced the deployment in between);
 * otherwise it reads them again.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deployments', (t) => {
    t.integer('advance_seq').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deployments', (t) => t.dropColumn('advance_seq'));
}
