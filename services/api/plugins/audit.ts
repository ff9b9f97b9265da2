/**
 * Every change made through the API runs in ONE transaction that also writes its audit event
 * (domain/audit.ts), so a change is never stored without its record or the other way round.
 *
 * How: every request carries its own deps (`request.deps`, set in onRequest to app.deps), which
 * handlers hand to the domain code. Each changing route's handler is wrapped (onRoute) to open a
 * transaction and set `request.deps` to deps whose store is that transaction, so the domain code
 * is unchanged. (No async-local storage: one run() turns on V8's promise hooks for the whole
 * process for good, and every await anywhere then costs about twice as much.) Work that must see
 * the committed change (waking the engine for a new deployment, automatic deployments of a new
 * release) is deferred until after the commit, and an answer the handler sent early
 * (`reply.send()`) is held in onSend until the commit is done. Before and after are the resource
 * as its own GET route shows it (with the caller's credentials), else the answer's body: the after
 * is read inside the transaction, its injected GET naming it by a random token in an internal
 * header that only a transaction open now gives meaning to.
 *
 * Not in a transaction: the streamed package upload (its bytes must not hold a connection); its
 * event is written right after it succeeds. Sign-in attempts are recorded failed or not.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { ErrorCode, toError } from '../../core/index.ts';
import { isDatabaseUnavailable, recordChange, recordSignIn, sendChangeRecord } from '../../domain/index.ts';
import type { Store } from '../../store/index.ts';
import type { ApiDeps } from '../routes/route-types.ts';

/**
 * Internal header of the GET a change's audit injects to read the resource inside its transaction:
 * the token of that transaction (see `open` in registerAudit). Any other value is ignored.
 */
const TRANSACTION_HEADER = 'x-gantry-audit-transaction';
/** What the race below yields when the handler started answering before it returned. */
const SENT = { sent: true } as const;
const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Streamed uploads: recorded after they succeed, outside any transaction. */
const STREAMED = new Set(['/api/packagestore/package']);
/** A last URL segment that names what was done to the resource before it. */
const VERBS = new Set([
  'deploy',
  'promote',
  'cancel',
  'clone',
  'confirm',
  'negotiate',
  'order',
  'approve',
  'reject',
  'rollback',
]);

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The use-case dependencies for this request: app.deps, but inside a change's transaction its
     * `store` is that transaction and the engine's wake-ups wait for the commit.
     */
    deps: ApiDeps;
    /** Settles once the request's transaction is over: an Error when its commit failed. */
    auditCommitted: Promise<Error | null> | null;
    /** Called by onSend: the handler has started answering. */
    auditSending: (() => void) | null;
  }
}

/** Work a request's deps put off until its transaction commits. */
type AfterCommit = Array<() => Promise<unknown>>;

/**
 * The deps a request (or, with no `tx`, the app: app.deps) gets: the root deps, but `store` is the
 * request's transaction `tx` when it has one, and the engine's wake-ups wait for its commit.
 */
function scopedDeps(root: ApiDeps, tx?: { store: Store; afterCommit: AfterCommit }): ApiDeps {
  // A transaction inside the request's runs on the request's own, without a savepoint of its own
  // (two round trips less for every request that uses one): the request's transaction is already
  // all or nothing, as nothing of a request that fails or answers an error is stored
  // (transactional() below rolls it back).
  const store: Store = tx
    ? { ...tx.store, transaction: <T>(fn: (inner: Store) => Promise<T>) => fn(tx.store) }
    : root.store;
  // Read when called, not when wrapped: the composition root (and tests) may set them later.
  const afterCommit =
    <A extends unknown[]>(get: () => ((...args: A) => Promise<void>) | undefined) =>
    (...args: A): Promise<void> => {
      const fn = get();
      if (!fn) return Promise.resolve();
      if (!tx) return fn(...args);
      tx.afterCommit.push(() => fn(...args));
      return Promise.resolve();
    };
  const scoped: ApiDeps = { ...root, store };
  // Hooks set later (by the composition root, or a test, on app.deps) land on the root deps, and
  // are still called only after the request's transaction commits.
  Object.defineProperties(scoped, {
    wakeDeployments: {
      enumerable: true,
      get: () => afterCommit(() => root.wakeDeployments),
      set: (fn: ApiDeps['wakeDeployments']) => void (root.wakeDeployments = fn),
    },
    onReleaseCreated: {
      enumerable: true,
      get: () => afterCommit(() => root.onReleaseCreated),
      set: (fn: ApiDeps['onReleaseCreated']) => void (root.onReleaseCreated = fn),
    },
    // Cached reads are forgotten once the deletion is committed (read before it, they were still true).
    forgetCachedReads: {
      enumerable: true,
      get: () => afterCommit(() => root.forgetCachedReads),
      set: (fn: ApiDeps['forgetCachedReads']) => void (root.forgetCachedReads = fn),
    },
    // The replica holding the agent reads the request: only once it is committed.
    upgradeAgents: {
      enumerable: true,
      get: () => afterCommit(() => root.upgradeAgents),
      set: (fn: ApiDeps['upgradeAgents']) => void (root.upgradeAgents = fn),
    },
  });
  return scoped;
}

/** The deps decorated on the app (app.deps): the root deps, with hooks that may be set later. */
export function appDeps(root: ApiDeps): ApiDeps {
  // An app built only to describe itself (the OpenAPI document for the client) has no store.
  if (typeof root.store !== 'object') return root;
  return scopedDeps(root);
}

/** Thrown inside a request's transaction to roll it back when the handler answered an error. */
class ErrorAnswered extends Error {
  readonly first: { value: unknown } | typeof SENT;
  constructor(first: { value: unknown } | typeof SENT) {
    super('the request answered an error: its transaction is rolled back');
    this.first = first;
  }
}

/** `project/step` + `deploy` from '/api/project/step', '/api/release/deploy'. */
function describeRoute(url: string, method: string): { resourceType: string; action: string } {
  const segments = url
    .replace(/^\/api\//, '')
    .split('/')
    .filter((s) => !s.startsWith(':'));
  const last = segments.at(-1) ?? '';
  if (VERBS.has(last) && segments.length > 1) return { resourceType: segments.slice(0, -1).join('/'), action: last };
  if (url === '/api/session' && method === 'DELETE') return { resourceType: 'session', action: 'sign-out' };
  const action = method === 'POST' ? 'create' : method === 'DELETE' ? 'delete' : 'update';
  return { resourceType: segments.join('/'), action };
}

/** String properties named `…Id` of the objects given, first one wins. */
function idsOf(...sources: unknown[]): Record<string, string> {
  const ids: Record<string, string> = {};
  for (const source of sources) {
    if (!source || typeof source !== 'object' || Array.isArray(source)) continue;
    for (const [key, value] of Object.entries(source)) {
      if (/Id$/.test(key) && typeof value === 'string' && !(key in ids)) ids[key] = value;
    }
  }
  return ids;
}

/** The ID of the resource itself: `projectStepId` for project/step, else the first ID the request named. */
function resourceIdOf(resourceType: string, ids: Record<string, string>, requestIds: Record<string, string>) {
  const own = resourceType.replace(/[/-](\w)/g, (_m, c: string) => c.toUpperCase()) + 'Id';
  const lastOwn = (resourceType.split('/').at(-1) ?? '').replace(/-(\w)/g, (_m, c: string) => c.toUpperCase()) + 'Id';
  return ids[own] ?? ids[lastOwn] ?? Object.values(requestIds)[0] ?? null;
}

/** For an update whose resource has no GET by ID: which fields were sent (never their values: one may be a secret). */
function changedFields(request: FastifyRequest): { changed: string[] } | null {
  const body = request.body;
  if (request.method !== 'PUT' || !body || typeof body !== 'object' || Array.isArray(body)) return null;
  return { changed: Object.keys(body).filter((key) => !/Id$/.test(key)) };
}

function addressOf(request: FastifyRequest): string | null {
  return request.ip || null;
}

/** Must be registered before any hook that uses request.deps (authentication). */
export function registerAudit(app: FastifyInstance, root: ApiDeps): void {
  app.decorateRequest('auditCommitted', null);
  app.decorateRequest('auditSending', null);
  app.decorateRequest('deps', null as unknown as ApiDeps);

  /** The deps of the transactions open now, by an unguessable token (for show() below). */
  const open = new Map<string, ApiDeps>();
  app.addHook('onRequest', async (request) => {
    const token = request.headers[TRANSACTION_HEADER];
    request.deps = (typeof token === 'string' ? open.get(token) : undefined) ?? app.deps;
  });

  /** The resource as its GET route shows it to this caller now, or null (no such route, or not 200). */
  const show = async (
    request: FastifyRequest,
    url: string,
    ids: Record<string, string>,
    transaction: string | null,
  ): Promise<unknown> => {
    if (Object.keys(ids).length === 0) return null;
    if (!app.routeCatalog.some((route) => route.method === 'GET' && route.url === url)) return null;
    const headers: Record<string, string> = {};
    if (transaction !== null) headers[TRANSACTION_HEADER] = transaction;
    for (const name of ['authorization', 'cookie'] as const) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const response = await app.inject({ method: 'GET', url, query: ids, headers });
    return response.statusCode === 200 && response.body ? (JSON.parse(response.body) as unknown) : null;
  };

  const transactional = (original: RouteHandlerMethod, url: string): RouteHandlerMethod =>
    async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const { resourceType, action } = describeRoute(url, request.method);
      let settle!: (failure: Error | null) => void;
      request.auditCommitted = new Promise((resolve) => (settle = resolve));
      // A handler that answers with `return reply.send()` resolves only once the answer is out
      // (a Reply is a thenable), and the answer waits for the commit: so the handler counts as
      // done as soon as it starts sending (onSend), not when its promise settles.
      const sending = new Promise<typeof SENT>((resolve) => (request.auditSending = () => resolve(SENT)));
      const afterCommit: AfterCommit = [];
      const token = randomUUID();
      let handled: Promise<unknown> | null = null;
      try {
        const requestIds = idsOf(request.body, request.query);
        // Read before the transaction opens: the committed state, on a connection of its own.
        const before = request.method === 'POST' ? null : await show(request, url, requestIds, null);
        // Wrapped in an object: knex must not adopt a thenable Reply as the transaction's result.
        const outcome = await root.store
          .transaction(async (tx) => {
            const deps = scopedDeps(root, { store: tx, afterCommit });
            request.deps = deps;
            open.set(token, deps);
            try {
              handled = Promise.resolve(original.call(this, request, reply));
              handled.catch(() => undefined);
              const first = await Promise.race([handled.then((value) => ({ value })), sending]);
              const answer = !('value' in first) || first.value === reply ? null : first.value;
              // Signing out under HTTP Basic ends nothing: no event.
              const changed = reply.statusCode < 400 && !(url === '/api/session' && request.session === null);
              // The change's last statement: the COMMIT is sent right behind it (see below).
              let recorded: { answered: Promise<void> } | null = null;
              if (changed) {
                const ids = idsOf(request.body, request.query, answer, before);
                // After an update: its GET inside this transaction, so it shows the change.
                const after = request.method === 'PUT' ? await show(request, url, ids, token) : null;
                recorded = await sendChangeRecord(deps, {
                  principal: request.principal,
                  action,
                  resourceType,
                  resourceId: resourceIdOf(resourceType, ids, requestIds),
                  ids,
                  before,
                  after: request.method === 'DELETE' ? null : (after ?? answer ?? changedFields(request)),
                  address: addressOf(request),
                  requestId: request.id,
                  status: reply.statusCode,
                });
              }
              // An error answer stores nothing, even one a handler gave without throwing (its
              // nested transactions have no savepoints to undo their part: see scopedDeps).
              if (reply.statusCode >= 400) throw new ErrorAnswered(first);
              return { first, recorded };
            } finally {
              open.delete(token);
            }
          })
          .catch((error: unknown) => {
            if (error instanceof ErrorAnswered) return { first: error.first, rolledBack: true };
            throw error;
          });
        // The event failed after it was sent: its COMMIT rolled the whole change back.
        if (!('rolledBack' in outcome)) await outcome.recorded?.answered;
        settle(null);
        if ('rolledBack' in outcome) return 'value' in outcome.first ? outcome.first.value : handled;
        for (const work of afterCommit) {
          work().catch((error: unknown) => request.log.warn({ err: toError(error) }, 'after-commit work failed'));
        }
        const { first } = outcome;
        return 'value' in first ? first.value : handled;
      } catch (error) {
        settle(toError(error));
        throw error;
      }
    };

  const streamed = (original: RouteHandlerMethod, url: string): RouteHandlerMethod =>
    async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const value: unknown = await original.call(this, request, reply);
      if (reply.statusCode < 400) {
        const answer = value === reply ? null : value;
        const { resourceType, action } = describeRoute(url, request.method);
        const ids = idsOf(request.query, answer);
        await recordChange(app.deps, {
          principal: request.principal,
          action,
          resourceType,
          resourceId: resourceIdOf(resourceType, ids, ids),
          ids,
          before: null,
          after: answer,
          address: addressOf(request),
          requestId: request.id,
          status: reply.statusCode,
        });
      }
      return value;
    };

  const signIn = (original: RouteHandlerMethod): RouteHandlerMethod =>
    async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const body = request.body as { serviceAccountId?: unknown } | undefined;
      const accountId = typeof body?.serviceAccountId === 'string' ? body.serviceAccountId : '';
      const attempt = { accountId, address: addressOf(request), requestId: request.id };
      try {
        const value: unknown = await original.call(this, request, reply);
        await recordSignIn(app.deps, { ...attempt, succeeded: true, status: reply.statusCode });
        return value;
      } catch (error) {
        const status = (error as { statusCode?: number }).statusCode;
        if (!isDatabaseUnavailable(error)) {
          await recordSignIn(app.deps, { ...attempt, succeeded: false, status: status ?? 401 }).catch(
            (failure: unknown) => request.log.warn({ err: toError(failure) }, 'failed sign-in not recorded'),
          );
        }
        throw error;
      }
    };

  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    if (!methods.some((method) => CHANGES.has(method))) return;
    const original = route.handler as RouteHandlerMethod;
    if (route.url === '/api/session' && methods.includes('POST')) route.handler = signIn(original);
    else if (route.config?.public) return;
    else if (STREAMED.has(route.url)) route.handler = streamed(original, route.url);
    else route.handler = transactional(original, route.url);
  });

  // An answer sent from inside the transaction leaves only once the commit is done; if the
  // commit failed, the change did not happen and the answer says so instead.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.auditCommitted) return payload;
    request.auditSending?.();
    const failure = await request.auditCommitted;
    if (!failure || reply.statusCode >= 400) return payload;
    request.log.error({ err: failure }, 'change rolled back after its answer was prepared');
    const unavailable = isDatabaseUnavailable(failure);
    reply.code(unavailable ? 503 : 500).header('content-type', 'application/json; charset=utf-8');
    if (unavailable) reply.header('retry-after', '5');
    return JSON.stringify({
      error: unavailable ? 'The database is unavailable; retry shortly' : 'The change was not saved',
      errorcode: ErrorCode.UnknownError,
      requestid: request.id,
    });
  });
}
