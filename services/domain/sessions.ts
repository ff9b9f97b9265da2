/**
 * Dashboard sessions (issue #11): a service account's ID and API key are traded once for a random
 * session token that the browser keeps in an HttpOnly cookie, so no secret lives in page script.
 * Sessions expire, end at sign-out, and end with the API key or account they were opened with.
 *
 * The CSRF token is derived from the session token (one-way): the page reads it from the sign-in
 * answer or GET /api/session and sends it as a header; a cross-site form cannot know it.
 */
import { timingSafeEqual } from 'node:crypto';
import { hashSecret, InvalidCredentialsError, newId, newSecret, type Principal } from '../core/index.ts';
import { authenticate } from './authentication.ts';
import type { DomainDeps } from './deps.ts';

/** How long a session lasts after sign-in; signing in again starts a new one. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface SessionContext {
  id: string;
  /** The cookie's value, kept only for the length of the request (never stored or logged). */
  token: string;
  expiresUtc: Date;
}

export interface OpenedSession {
  principal: Principal;
  session: SessionContext;
  csrfToken: string;
}

export function csrfTokenOf(sessionToken: string): string {
  return hashSecret(`gantry.csrf:${sessionToken}`);
}

/** Constant-time comparison of a sent CSRF token with the session's. */
export function isCsrfTokenOf(sessionToken: string, sent: string | undefined): boolean {
  if (!sent) return false;
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  const given = Buffer.from(sent);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export async function signIn(deps: DomainDeps, serviceAccountId: string, apiKey: string): Promise<OpenedSession> {
  const principal = await authenticate(deps, serviceAccountId, apiKey);
  const token = newSecret();
  const now = deps.clock.now();
  const session = { id: newId(), token, expiresUtc: new Date(now.getTime() + SESSION_TTL_MS) };
  const opened = await deps.store.dashboardSessions.insert({
    id: session.id,
    tokenHash: hashSecret(token),
    serviceAccountId: principal.serviceAccountId,
    apiKeyHash: hashSecret(apiKey),
    createdUtc: now,
    expiresUtc: session.expiresUtc,
  });
  if (!opened) throw new InvalidCredentialsError('Invalid service account ID or API key');
  // Sign-ins are rare: each sweeps away the rows of sessions that ended a day ago or more.
  await deps.store.dashboardSessions.deleteEnded(new Date(now.getTime() - 24 * 60 * 60 * 1000));
  return { principal, session, csrfToken: csrfTokenOf(token) };
}

/** The principal of a live session, or 401/2002 (expired, signed out, key or account deleted). */
export async function authenticateSession(
  deps: DomainDeps,
  token: string,
): Promise<{ principal: Principal; session: SessionContext }> {
  const found = await deps.store.dashboardSessions.findLive(hashSecret(token), deps.clock.now());
  if (!found) throw new InvalidCredentialsError('The session has expired or was signed out: sign in again');
  const { account } = found;
  return {
    principal: {
      serviceAccountId: account.id,
      name: account.name,
      organizationId: account.organizationId,
      workspaceId: account.workspaceId,
      roles: account.roles,
    },
    session: { id: found.id, token, expiresUtc: found.expiresUtc },
  };
}

export async function signOut(deps: DomainDeps, session: SessionContext): Promise<void> {
  await deps.store.dashboardSessions.revoke(session.id, deps.clock.now());
}
