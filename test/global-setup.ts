/**
 * Runs once per `vitest run`: checks the real PostgreSQL is reachable, drops databases left by
 * earlier runs (kept on purpose so a failure can be inspected), and builds one migrated template
 * that every test file clones (CREATE DATABASE … TEMPLATE is far faster than migrating again).
 */
import { createDb, migrateToLatest } from '../services/store/index.ts';
import { TEMPLATE_DB, TEST_DB_PREFIX, urlFor, withAdminClient, PG_ADMIN_URL } from './helpers/postgres.ts';

export default async function setup(): Promise<void> {
  await withAdminClient(async (client) => {
    const stale = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${TEST_DB_PREFIX}%`]);
    for (const { datname } of stale.rows) {
      await client.query(`drop database if exists "${datname}" with (force)`);
    }
    await client.query(`create database "${TEMPLATE_DB}"`);
  }).catch((error: unknown) => {
    throw new Error(`PostgreSQL at ${PG_ADMIN_URL} is not usable for tests (run .ci/run, which starts it): ${String(error)}`);
  });
  const db = createDb(urlFor(TEMPLATE_DB), { poolMax: 2 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}
