/** `npm run db:migrate`: applies pending migrations to DATABASE_URL (the server also does this on start). */
import { loadConfig } from '../config.ts';
import { createDb } from './db.ts';
import { migrateToLatest } from './migrate.ts';

const config = loadConfig();
if (!config.databaseUrl) {
  console.error('Set DATABASE_URL; the embedded database is migrated by `npm start` itself.');
  process.exit(2);
}
const db = createDb(config.databaseUrl, { poolMax: 2 });
try {
  await migrateToLatest(db);
  console.log('migrations applied');
} finally {
  await db.destroy();
}
