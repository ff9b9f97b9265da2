/**
 * Agents authenticate by looking a machine up by the hash of their registration token or of their
 * credential, on every connect: index both, and make them unique so one secret can never resolve
 * to two machines.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'create unique index machines_registration_token_uq on machines (registration_token_hash) where registration_token_hash is not null',
  );
  await knex.raw(
    'create unique index machines_agent_credential_uq on machines (agent_credential_hash) where agent_credential_hash is not null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists machines_agent_credential_uq');
  await knex.raw('drop index if exists machines_registration_token_uq');
}
