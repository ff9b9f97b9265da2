/**
 * The package store (contract §6): one row per published package, and the direct uploads that
 * were negotiated but not yet confirmed. Blobs live outside the database (filesystem or Azure).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('packages', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('package_id').notNullable();
    // Exactly as uploaded, build metadata included.
    t.text('version').notNullable();
    // The version without build metadata: SemVer says build metadata does not affect precedence,
    // so 1.0.0+a and 1.0.0+b could never be told apart by "latest" or by a release; one of them only.
    t.text('version_precedence').notNullable();
    t.text('type').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.text('sha256').notNullable();
    t.text('blob_key').notNullable().unique();
    t.timestamp('uploaded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    'create unique index packages_version_uq on packages (workspace_id, lower(package_id), version_precedence)',
  );

  await knex.schema.createTable('pending_uploads', (t) => {
    // Also the token in the upload URL; the signature, not the secrecy of this ID, protects it.
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('file_name').notNullable();
    t.text('blob_key').notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('uploaded_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // One open direct upload per file name: a new negotiate replaces the previous one.
  await knex.raw('create unique index pending_uploads_file_uq on pending_uploads (workspace_id, lower(file_name))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('pending_uploads');
  await knex.schema.dropTable('packages');
}
