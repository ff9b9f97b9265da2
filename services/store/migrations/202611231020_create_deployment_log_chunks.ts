/**
 * What agents print is stored as chunks: one row per batch of a task's lines (hundreds to
 * thousands), not one row per line — a 5M-line step is a few thousand rows, written at the speed
 * of the agent rather than of per-row inserts and index maintenance. A chunk covers the ticks
 * first_tick..last_tick of its deployment (ranges never overlap; entries of deployment_logs fall
 * between them), and a reader turns it back into log items. deployment_tasks.last_log_seq is the
 * last line stored per task: a batch is stored once, only while its task runs.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('deployment_log_chunks', (t) => {
    t.text('deployment_id').notNullable().references('deployments.id');
    t.bigInteger('first_tick').notNullable();
    t.bigInteger('last_tick').notNullable();
    t.text('task_id').notNullable();
    t.text('step_id');
    t.text('parent_log_id');
    t.integer('first_seq').notNullable();
    t.integer('line_count').notNullable();
    t.integer('byte_count').notNullable();
    // One byte per line, 0 Information and 1 Warning; null when every line is Information.
    t.binary('levels');
    // One unsigned LEB128 varint per line after the first: ticks after the line before; null: 1 each.
    t.binary('tick_steps');
    // The lines, each followed by '\n'.
    t.text('data').notNullable();
    t.primary(['deployment_id', 'last_tick']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('deployment_log_chunks');
}
