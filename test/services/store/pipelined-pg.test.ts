/**
 * Transactions on pipelined connections (services/store/pipelined-pg.ts): BEGIN is written without
 * waiting for its answer, so the transaction's first statement leaves right behind it; everything
 * a transaction does still commits or rolls back as one.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../../services/store/index.ts';
import { sendWithoutWaiting } from '../../../services/store/db.ts';
import { PG_ADMIN_URL } from '../../helpers/postgres.ts';

const db = createDb(PG_ADMIN_URL, { poolMax: 2 });
const table = `pipelined_probe_${randomUUID().replace(/-/g, '')}`;
const rows = async () => (await db(table).select('n').orderBy('n')).map((r: { n: number }) => r.n);

/** What node-postgres's client (knex's connection) shows of the query on the wire. */
interface RawConnection {
  pipeline: boolean;
  _getActiveQuery(): { text?: string } | null | undefined;
}

beforeAll(async () => {
  await db.schema.createTable(table, (t) => t.integer('n').primary());
});

afterAll(async () => {
  await db.schema.dropTableIfExists(table);
  await db.destroy();
});

describe('a transaction on a pipelined connection', () => {
  it('starts its work while BEGIN is still unanswered', async () => {
    await db.transaction(async (trx) => {
      const connection = await (trx.client as { acquireConnection(): Promise<RawConnection> }).acquireConnection();
      expect(connection.pipeline).toBe(true);
      // Knex waited for BEGIN's answer before calling this function; now the answer is still to come.
      expect(connection._getActiveQuery()?.text).toBe('BEGIN;');
      await trx(table).insert({ n: 1 });
    });
    expect(await rows()).toEqual([1]);
  });

  it('rolls back as one: a failing statement leaves nothing of the transaction stored', async () => {
    const failed = await db
      .transaction(async (trx) => {
        await trx(table).insert({ n: 2 });
        await trx(table).insert({ n: 1 }); // a duplicate key
      })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(String(failed)).toMatch(/duplicate key/);
    expect(await rows()).toEqual([1]);
  });

  it('keeps concurrent transactions apart on a pool of two connections', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        db.transaction(async (trx) => {
          await trx(table).insert({ n: 100 + i });
          if (i % 2 === 1) throw new Error(`abandon ${i}`);
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(20);
    expect(await rows()).toEqual([1, ...Array.from({ length: 20 }, (_, i) => 100 + 2 * i)]);
  });

  it('sendWithoutWaiting resolves once the statement is written, before its answer; the COMMIT sent behind it commits it', async () => {
    let answeredBeforeReturn: boolean | null = null;
    let answered = false;
    let sent: { answered: Promise<void> } | undefined;
    await db.transaction(async (trx) => {
      const statement = trx(table).insert({ n: 3 });
      statement.on('query-response', () => (answered = true));
      sent = await sendWithoutWaiting(statement);
      answeredBeforeReturn = answered;
    });
    await sent!.answered;
    expect(answeredBeforeReturn).toBe(false);
    expect(answered).toBe(true);
    expect(await rows()).toContain(3);
  });

  it('sendWithoutWaiting of a statement that fails: the COMMIT behind it rolls the whole transaction back, and answered rejects', async () => {
    let sent: { answered: Promise<unknown> } | undefined;
    await db.transaction(async (trx) => {
      await trx(table).insert({ n: 4 });
      sent = await sendWithoutWaiting(trx(table).insert({ n: 1 })); // a duplicate key
    });
    await expect(sent!.answered).rejects.toThrow(/duplicate key/);
    expect(await rows()).not.toContain(4);
  });
});
