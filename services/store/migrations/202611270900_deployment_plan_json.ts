/**
 * A deployment's plan is stored as `json` (its text as written), compressed with lz4 where the
 * server has it. The plan is opaque to SQL (written once at validation, read back whole by a
 * replica taking over), so `jsonb`'s binary form only cost: for a 10,000-machine deployment (1.3
 * MB) PostgreSQL took ~30 ms to parse and pglz-compress it on the way to the first dispatch,
 * against ~20 ms as json with pglz and ~5 ms as json with lz4 (and reading it back 15 → 6 ms).
 * The embedded PostgreSQL is built without lz4: there the column keeps the default compression.
 * Rewrites the deployments table once (ALTER … TYPE).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deployments ALTER COLUMN plan TYPE json USING plan::json');
  await knex.raw(`
    DO $$ BEGIN
      ALTER TABLE deployments ALTER COLUMN plan SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported THEN NULL;
    END $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deployments ALTER COLUMN plan SET COMPRESSION default');
  await knex.raw('ALTER TABLE deployments ALTER COLUMN plan TYPE jsonb USING plan::jsonb');
}
