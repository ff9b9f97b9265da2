/**
 * For fleets of thousands of machines (issue #20).
 *
 * deployments.advance_seq counts the claims of a deployment. A replica that keeps a wide
 * deployment's task statuses in memory between its advances trusts them only when the claim it
 * holds follows its own last one (no other replica advanced the deployment in between); otherwise
 * it reads them again.
 *
 * deployment_tasks_running_by_machine: the running tasks of a machine are looked up whenever its
 * agent connects and (batched) at its heartbeats; without an index that read scanned every task
 * ever stored. Partial: only running tasks are ever looked up this way, and they are few.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deployments', (t) => {
    t.integer('advance_seq').notNullable().defaultTo(0);
  });
  await knex.raw(
    `create index deployment_tasks_running_by_machine on deployment_tasks (machine_id) where status = 'Running'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index deployment_tasks_running_by_machine');
  await knex.schema.alterTable('deployments', (t) => t.dropColumn('advance_seq'));
}
