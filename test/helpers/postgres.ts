/** Connection details of the real PostgreSQL the tests use (127.0.0.1:5432, trust auth). */
import pg from 'pg';

export const PG_ADMIN_URL = process.env.GANTRY_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Every test database name starts with this, then `<unix seconds of the run>_`. */
export const TEST_DB_PREFIX = 'gantry_test_';

export function urlFor(database: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function withAdminClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
