/**
 * Idempotency keys (the `Idempotency-Key` header on release create, deploy and promote): a retry
 * with the same key within 24 h returns the first answer instead of acting twice. The answer is
 * stored in the same transaction as the change it reports.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('service_account_id').notNullable();
    t.text('key').notNullable();
    t.text('operation').notNullable();
    // sha256 of the operation and its request body: the same key with another request is refused.
    t.text('request_hash').notNullable();
    // Who holds the claim: an answer is stored only by its holder, so a claim taken over from a
    // request presumed dead makes that request roll back rather than act a second time.
    t.text('claim_token').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    // Null while the first request is in progress.
    t.timestamp('completed_at', { useTz: true });
    t.jsonb('response');
    t.primary(['service_account_id', 'key']);
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('idempotency_keys');
}
