/**
 * /api/session (issue #11): the dashboard signs in with a service account's ID and API key and
 * gets a session cookie (HttpOnly, SameSite=Strict) instead of keeping the key in the page.
 */
import { Type } from '@sinclair/typebox';
import { CAPABILITIES } from '../../../core/index.ts';
import { csrfTokenOf, getMe, signIn, signOut, type SessionContext } from '../../../domain/index.ts';
import type { Principal } from '../../../core/index.ts';
import type { DomainDeps } from '../../../domain/index.ts';
import { assertSameOrigin, setSessionCookie } from '../../plugins/auth.ts';
import { errorResponses, Id, Nullable } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

const tags = ['sessions'];

const SessionSchema = Type.Object({
  serviceAccountId: Id,
  name: Type.String(),
  organizationName: Type.String(),
  workspaceId: Nullable(Id),
  roles: Type.Array(
    Type.Object({
      role: Type.Union(CAPABILITIES.map((c) => Type.Literal(c))),
      projectIds: Type.Optional(Type.Array(Id)),
      environmentIds: Type.Optional(Type.Array(Id)),
    }),
  ),
  /** Send it as X-CSRF-Token on every state-changing request; null under HTTP Basic. */
  csrfToken: Nullable(Type.String()),
  expiresUtc: Nullable(Type.String()),
});

async function describeSession(deps: DomainDeps, principal: Principal, session: SessionContext | null) {
  const me = await getMe(deps, principal);
  return {
    serviceAccountId: me.serviceAccountId,
    name: me.name,
    organizationName: me.organizationName,
    workspaceId: me.workspaceId,
    roles: me.roles,
    csrfToken: session ? csrfTokenOf(session.token) : null,
    expiresUtc: session ? session.expiresUtc.toISOString() : null,
  };
}

export const sessionRoutes: Routes = async (app) => {
  app.post(
    '/api/session',
    {
      schema: {
        tags,
        summary: 'Signs in to the dashboard: trades a service account ID and API key for a session cookie',
        body: Type.Object({ serviceAccountId: Id, apiKey: Type.String({ minLength: 1, maxLength: 500 }) }),
        response: { 200: SessionSchema, ...errorResponses },
      },
      // Public: this is where credentials are first checked (a bad pair is 401/2002 as everywhere).
      config: { public: true },
    },
    async (request, reply) => {
      // Login CSRF: another site must not sign a visitor in to an account of its choosing.
      assertSameOrigin(request);
      const opened = await signIn(request.deps, request.body.serviceAccountId, request.body.apiKey);
      const maxAgeSeconds = (opened.session.expiresUtc.getTime() - request.deps.clock.now().getTime()) / 1000;
      setSessionCookie(request, reply, { token: opened.session.token, maxAgeSeconds });
      return describeSession(request.deps, opened.principal, opened.session);
    },
  );

  app.get(
    '/api/session',
    {
      schema: {
        tags,
        summary: 'The signed-in account, its roles and the CSRF token of its session',
        response: { 200: SessionSchema, ...errorResponses },
      },
    },
    async (request) => describeSession(request.deps, request.principal, request.session),
  );

  app.delete(
    '/api/session',
    {
      schema: { tags, summary: 'Signs out: the session ends and its cookie is cleared', response: errorResponses },
    },
    async (request, reply) => {
      // Under HTTP Basic there is no session to end: nothing happens.
      if (request.session) {
        await signOut(request.deps, request.session);
        setSessionCookie(request, reply, null);
      }
      return reply.send();
    },
  );
};
