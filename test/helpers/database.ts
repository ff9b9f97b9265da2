/** A fresh database per test file, cloned from this run's migrated template (see global-setup). */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { urlFor, withAdminClient } from './postgres.ts';

export interface TestDatabase {
  name: string;
  url: string;
}

/** `empty: true` gives a database with no schema at all (for migration tests). */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `${inject('runPrefix')}${randomBytes(5).toString('hex')}`;
  const template = options.empty ? 'template0' : inject('templateDb');
  await withAdminClient(async (client) => {
    // Several files clone at once; PostgreSQL refuses a template while another clone reads it.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`create database "${name}" template "${template}"`);
        return;
      } catch (error) {
        if (attempt >= 100 || !String(error).includes('is being accessed by other users')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
      }
    }
  });
  return { name, url: urlFor(name) };
}
