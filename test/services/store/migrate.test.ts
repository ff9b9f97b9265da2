import { afterEach, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import {
  createDb,
  createStore,
  migrateToLatest,
  rollbackAll,
  SchemaTooNewError,
} from '../../../services/store/index.ts';
import { migrations } from '../../../services/store/migrations/index.ts';
import { createTestDatabase } from '../../helpers/database.ts';

const open: Knex[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.destroy()));
});

async function emptyDatabase(handles: number): Promise<Knex[]> {
  const { url } = await createTestDatabase({ empty: true });
  const dbs = Array.from({ length: handles }, () => createDb(url, { poolMax: 3 }));
  open.push(...dbs);
  return dbs;
}

describe('migrations', () => {
  it('migrate once when replicas start together on an empty database', async () => {
    const dbs = await emptyDatabase(3);
    await Promise.all(dbs.map((db) => migrateToLatest(db)));
    const applied = await dbs[0]!('knex_migrations').select('name');
    expect(applied.map((r) => r.name)).toEqual(migrations.map(([name]) => name));
  });

  it('seed one installation when replicas bootstrap together', async () => {
    const dbs = await emptyDatabase(3);
    await migrateToLatest(dbs[0]!);
    const results = await Promise.all(dbs.map((db) => createStore(db).seed()));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.organizationId)).size).toBe(1);
    expect(await dbs[0]!('workspaces').count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('roll back with rows present and migrate up again', async () => {
    const [db] = await emptyDatabase(1);
    await migrateToLatest(db!);
    await createStore(db!).seed();
    await rollbackAll(db!);
    expect(await db!.schema.hasTable('workspaces')).toBe(false);
    await migrateToLatest(db!);
    expect(await db!.schema.hasTable('workspaces')).toBe(true);
  });

  it('refuses to run against a schema newer than this build', async () => {
    const [db] = await emptyDatabase(1);
    await migrateToLatest(db!);
    await db!('knex_migrations').insert({
      name: '209912312359_from_the_future',
      batch: 99,
      migration_time: new Date(),
    });
    await expect(migrateToLatest(db!)).rejects.toBeInstanceOf(SchemaTooNewError);
  });
});
