/**
 * Runs once per `vitest run`: checks the real PostgreSQL is reachable and builds one migrated
 * template that every test file of this run clones (CREATE DATABASE … TEMPLATE is far faster than
 * migrating again). Databases are named per run, so runs side by side never touch each other's;
 * a run drops its own at the end, and leftovers of runs older than an hour are dropped at start.
 */
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { createDb, migrateToLatest } from '../services/store/index.ts';
import { TEST_DB_PREFIX, urlFor, withAdminClient, PG_ADMIN_URL } from './helpers/postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDb: string;
    runPrefix: string;
  }
}

async function dropDatabases(pattern: (name: string) => boolean): Promise<void> {
  await withAdminClient(async (client) => {
    const all = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [
      `${TEST_DB_PREFIX}%`,
    ]);
    for (const { datname } of all.rows.filter((r) => pattern(r.datname))) {
      await client.query(`drop database if exists "${datname}" with (force)`);
    }
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const startedSeconds = Math.floor(Date.now() / 1000);
  const runPrefix = `${TEST_DB_PREFIX}${startedSeconds}_${randomBytes(3).toString('hex')}_`;
  const templateDb = `${runPrefix}template`;
  await dropDatabases((name) => {
    const seconds = Number(name.slice(TEST_DB_PREFIX.length).split('_')[0]);
    return !Number.isFinite(seconds) || seconds < startedSeconds - 3600;
  }).catch((error: unknown) => {
    throw new Error(
      `PostgreSQL at ${PG_ADMIN_URL} is not usable for tests (npm test starts it via scripts/ensure-services.sh): ${String(error)}`,
    );
  });
  await withAdminClient((client) => client.query(`create database "${templateDb}"`));
  const db = createDb(urlFor(templateDb), { poolMax: 2 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  project.provide('templateDb', templateDb);
  project.provide('runPrefix', runPrefix);
  return async () => {
    await dropDatabases((name) => name.startsWith(runPrefix));
  };
}
