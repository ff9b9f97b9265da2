/**
 * The running tasks of a machine are looked up whenever its agent connects and (batched, issue
 * #20) at its heartbeats; without an index that read scanned every task ever stored. Partial: only
 * running tasks are ever looked up this way, and they are few.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create index deployment_tasks_running_by_machine on deployment_tasks (machine_id) where status = 'Running'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index deployment_tasks_running_by_machine');
}
