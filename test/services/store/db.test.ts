/** The knex handle's own warnings go to the logger it is given, not to the console. */
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../services/core/index.ts';
import { createDb, isDatabaseUnavailable } from '../../../services/store/index.ts';

describe('createDb', () => {
  it('hands knex’s "Acquire connection error" to the given logger when PostgreSQL is unreachable', async () => {
    const warnings: string[] = [];
    const port = await freePort();
    const db = createDb(`postgres://postgres@127.0.0.1:${port}/nothing`, {
      log: { warn: (message) => warnings.push(message), error: (message) => warnings.push(message) },
    });
    try {
      const error = await db.raw('select 1').then(
        () => null,
        (e: unknown) => e,
      );
      expect(isDatabaseUnavailable(error)).toBe(true);
      expect(warnings.some((w) => w.startsWith('Acquire connection error') && w.includes('ECONNREFUSED'))).toBe(true);
    } finally {
      await db.destroy();
    }
  });
});
