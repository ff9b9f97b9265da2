/**
 * Enrollment keys (issue #17): one reusable secret for a fleet of identical machines (an
 * autoscaling group, a compose file). Stored only as a SHA-256 hash; bound to a workspace's
 * environments and tags; may expire; revoked, never deleted (machines remember which key enrolled them).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('enrollment_keys', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    t.text('key_hash').notNullable().unique();
    t.specificType('environment_ids', 'text[]').notNullable();
    t.specificType('tag_ids', 'text[]').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.integer('use_count').notNullable().defaultTo(0);
    t.index(['workspace_id']);
  });
  await knex.schema.alterTable('machines', (t) => {
    t.text('enrollment_key_id').references('enrollment_keys.id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => t.dropColumn('enrollment_key_id'));
  await knex.schema.dropTable('enrollment_keys');
}
