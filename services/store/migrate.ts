/**
 * Runs the migrations under a PostgreSQL advisory lock, so replicas that start together migrate
 * once: the others wait on the lock, then find nothing to do.
 */
import type { Knex } from 'knex';
import { migrations, type Migration } from './migrations/index.ts';

const MIGRATION_LOCK_KEY = 727_001; // arbitrary, fixed: every Gantry process uses the same one

const source: Knex.MigrationSource<Migration> = {
  getMigrations: async () => migrations.map(([, migration]) => migration),
  getMigrationName: (migration) => migrations.find(([, m]) => m === migration)?.[0] ?? 'unknown',
  getMigration: async (migration) => migration,
};

export class SchemaTooNewError extends Error {}

export async function migrateToLatest(db: Knex): Promise<void> {
  const connection = await db.client.acquireConnection();
  try {
    await db.raw('select pg_advisory_lock(?)', [MIGRATION_LOCK_KEY]).connection(connection);
    const known = new Set(migrations.map(([name]) => name));
    if (await db.schema.hasTable('knex_migrations')) {
      const applied: Array<{ name: string }> = await db('knex_migrations').select('name');
      const unknown = applied.filter((row) => !known.has(row.name));
      if (unknown.length > 0) {
        throw new SchemaTooNewError(
          `The database schema is newer than this build of Gantry (unknown migrations: ${unknown.map((r) => r.name).join(', ')}). Upgrade Gantry.`,
        );
      }
    }
    await db.migrate.latest({ migrationSource: source });
  } finally {
    await db
      .raw('select pg_advisory_unlock(?)', [MIGRATION_LOCK_KEY])
      .connection(connection)
      .catch(() => undefined);
    await db.client.releaseConnection(connection);
  }
}

/** Migrations this build knows but the database lacks, and those the database has but this build does not. */
export async function migrationStatus(db: Knex): Promise<{ pending: string[]; unknown: string[] }> {
  const applied: Array<{ name: string }> = (await db.schema.hasTable('knex_migrations'))
    ? await db('knex_migrations').select('name')
    : [];
  const done = new Set(applied.map((row) => row.name));
  const known = new Set(migrations.map(([name]) => name));
  return {
    pending: migrations.map(([name]) => name).filter((name) => !done.has(name)),
    unknown: [...done].filter((name) => !known.has(name)),
  };
}

export async function rollbackAll(db: Knex): Promise<void> {
  await db.migrate.rollback({ migrationSource: source }, true);
}
