/** A fresh database per test file, cloned from the migrated template built by global-setup. */
import { randomBytes } from 'node:crypto';
import { TEMPLATE_DB, TEST_DB_PREFIX, urlFor, withAdminClient } from './postgres.ts';

export interface TestDatabase {
  name: string;
  url: string;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${TEST_DB_PREFIX}${randomBytes(6).toString('hex')}`;
  await withAdminClient(async (client) => {
    // Several files clone at once; PostgreSQL refuses a template while another clone reads it.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`create database "${name}" template "${TEMPLATE_DB}"`);
        return;
      } catch (error) {
        if (attempt >= 50 || !String(error).includes('is being accessed by other users')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
      }
    }
  });
  return { name, url: urlFor(name) };
}
