/**
 * Idempotency keys of service accounts: claimed before a request acts, completed with its answer
 * in the request's own transaction, released when the request fails.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from './db.ts';

export type IdempotencyClaim =
  | { state: 'claimed'; claimToken: string }
  | { state: 'completed'; operation: string; requestHash: string; response: unknown }
  | { state: 'in-progress'; operation: string; requestHash: string };

interface KeyRow {
  operation: string;
  request_hash: string;
  completed_at: Date | null;
  response: unknown;
}

export function idempotencyKeysStore(db: Db) {
  return {
    /**
     * Claims (accountId, key) for a request unless a live claim holds it: one that completed
     * after `expiredBefore`, or is in progress since after `abandonedBefore`. Otherwise reports
     * the holder, so the caller can replay its answer or refuse.
     */
    async claim(
      accountId: string,
      key: string,
      claim: { operation: string; requestHash: string; now: Date; expiredBefore: Date; abandonedBefore: Date },
    ): Promise<IdempotencyClaim> {
      const claimToken = randomUUID();
      const claimed = await db.raw<{ rows: unknown[] }>(
        `INSERT INTO idempotency_keys (service_account_id, key, operation, request_hash, claim_token, created_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (service_account_id, key) DO UPDATE
           SET operation = excluded.operation, request_hash = excluded.request_hash, claim_token = excluded.claim_token,
               created_at = excluded.created_at, completed_at = NULL, response = NULL
         WHERE idempotency_keys.created_at < ?
            OR (idempotency_keys.completed_at IS NULL AND idempotency_keys.created_at < ?)
         RETURNING 1`,
        [
          accountId,
          key,
          claim.operation,
          claim.requestHash,
          claimToken,
          claim.now,
          claim.expiredBefore,
          claim.abandonedBefore,
        ],
      );
      if (claimed.rows.length > 0) return { state: 'claimed', claimToken };
      const row: KeyRow | undefined = await db('idempotency_keys')
        .where({ service_account_id: accountId, key })
        .first('operation', 'request_hash', 'completed_at', 'response');
      // Released by its holder between the two statements: claim again.
      if (!row) return this.claim(accountId, key, claim);
      return row.completed_at
        ? { state: 'completed', operation: row.operation, requestHash: row.request_hash, response: row.response }
        : { state: 'in-progress', operation: row.operation, requestHash: row.request_hash };
    },
    /**
     * Stores the answer; called inside the transaction of the change it reports. False when the
     * claim is no longer this request's (another took it over): the caller must roll back.
     */
    async complete(accountId: string, key: string, claimToken: string, response: unknown, now: Date): Promise<boolean> {
      const updated = await db('idempotency_keys')
        .where({ service_account_id: accountId, key, claim_token: claimToken })
        .whereNull('completed_at')
        .update({ completed_at: now, response: JSON.stringify(response) });
      return updated > 0;
    },
    /** Drops an unfinished claim of this request: it failed and changed nothing, so a retry may act. */
    async release(accountId: string, key: string, claimToken: string): Promise<void> {
      await db('idempotency_keys')
        .where({ service_account_id: accountId, key, claim_token: claimToken })
        .whereNull('completed_at')
        .delete();
    },
    /** Removes up to `limit` claims older than `before` (kept small: called on the request path). */
    async pruneOlderThan(before: Date, limit: number): Promise<void> {
      await db.raw(
        'DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE created_at < ? LIMIT ?)',
        [before, limit],
      );
    },
  };
}
