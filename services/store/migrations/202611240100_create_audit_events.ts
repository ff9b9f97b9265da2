/**
 * The audit log (issue #14): one row per change made through the API, written in the change's
 * own transaction, and per sign-in attempt. Read newest first, per workspace (or organization),
 * filtered by resource, account and time: each filter has an index that starts with the scope.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.text('id').primary();
    // null: a sign-in attempt naming an account that does not exist (it belongs to no organization).
    t.text('organization_id');
    // null: an organization-wide change (service accounts, settings) or a sign-in.
    t.text('workspace_id');
    t.timestamp('occurred_at', { useTz: true }).notNullable();
    // null: a failed sign-in with no well-formed account ID.
    t.text('account_id');
    t.text('account_name');
    t.text('action').notNullable();
    t.text('resource_type').notNullable();
    t.text('resource_id');
    t.jsonb('before');
    t.jsonb('after');
    t.text('address');
    t.text('request_id');
    t.integer('status').notNullable();
  });
  await knex.raw('create index audit_events_workspace on audit_events (workspace_id, occurred_at desc, id desc)');
  await knex.raw('create index audit_events_organization on audit_events (organization_id, occurred_at desc, id desc)');
  await knex.raw('create index audit_events_resource on audit_events (resource_id, occurred_at desc)');
  await knex.raw('create index audit_events_account on audit_events (account_id, occurred_at desc)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('audit_events');
}
