/**
 * `Idempotency-Key` on release create, deploy and promote: pipelines retry on timeouts, and a
 * retry must not act twice. The first request claims (account, key); its answer is stored in the
 * same transaction as the change it reports, so a retry within 24 h gets exactly that answer —
 * also when the first one's reply was lost, or its process died right after the commit.
 */
import { createHash } from 'node:crypto';
import { ConflictError, InvalidParameterError, type Principal } from '../core/index.ts';
import type { Store } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';

/** How long an answer is replayed. */
const RETENTION_MS = 24 * 3600 * 1000;
/**
 * A claim in progress longer than this is presumed abandoned (its process died, or its database
 * connection did, before committing) and a retry may take it over. Safe however short: the answer
 * is stored only by the claim's holder, in the change's own transaction, so a first request still
 * alive after a takeover rolls back instead of acting twice.
 */
const ABANDONED_AFTER_MS = 10 * 1000;
const KEY_FORMAT = /^[\x21-\x7e]{1,200}$/;

/** Stores the answer inside the caller's transaction (a no-op without a key). */
export type RememberAnswer<T> = (tx: Store, answer: T) => Promise<void>;

export async function idempotent<T>(
  deps: DomainDeps,
  principal: Principal,
  request: { operation: string; key: string | undefined; body: unknown },
  act: (remember: RememberAnswer<T>) => Promise<T>,
): Promise<T> {
  const { key, operation } = request;
  if (key === undefined) return act(async () => undefined);
  if (!KEY_FORMAT.test(key)) {
    throw new InvalidParameterError('Idempotency-Key must be 1 to 200 printable ASCII characters', [
      { property: 'Idempotency-Key', messages: ['1 to 200 printable ASCII characters'] },
    ]);
  }
  const { store, clock } = deps;
  const accountId = principal.serviceAccountId;
  const requestHash = createHash('sha256')
    .update(operation)
    .update('\n')
    .update(JSON.stringify(request.body))
    .digest('hex');
  const now = clock.now();
  const expiredBefore = new Date(now.getTime() - RETENTION_MS);
  await store.idempotencyKeys.pruneOlderThan(expiredBefore, 100);
  const claim = await store.idempotencyKeys.claim(accountId, key, {
    operation,
    requestHash,
    now,
    expiredBefore,
    abandonedBefore: new Date(now.getTime() - ABANDONED_AFTER_MS),
  });
  if (claim.state !== 'claimed') {
    if (claim.operation !== operation || claim.requestHash !== requestHash) {
      throw new InvalidParameterError('This Idempotency-Key was used for a different request', [
        { property: 'Idempotency-Key', messages: ['already used for a different request'] },
      ]);
    }
    if (claim.state === 'completed') return claim.response as T;
    throw new ConflictError('A request with this Idempotency-Key is still in progress; retry shortly');
  }
  const { claimToken } = claim;
  try {
    return await act(async (tx, answer) => {
      if (!(await tx.idempotencyKeys.complete(accountId, key, claimToken, answer, clock.now())))
        throw new ConflictError('A retry with this Idempotency-Key took over while this request was still running');
    });
  } catch (error) {
    // Best effort: with the database gone the claim stays, and a retry takes it over once abandoned.
    await store.idempotencyKeys.release(accountId, key, claimToken).catch(() => undefined);
    throw error;
  }
}
