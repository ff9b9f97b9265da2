/**
 * Authentication (spec §5): HTTP Basic with service-account ID and API key on every route that
 * is not marked public — or, for the dashboard, a session cookie (issue #11). The route's
 * declared capability is checked here coarsely (does the account hold it at all?); the domain
 * then checks it against the project and environments the request touches, with the same
 * `authorize`.
 *
 * A request carrying an Authorization header is authenticated by it alone, exactly as before
 * sessions existed. A cookie-authenticated request that changes state must also carry the
 * session's CSRF token in `X-CSRF-Token` and, when the browser names one, a same-origin `Origin`:
 * the SameSite=Strict cookie already stays home, these make a forged request fail on its own.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  authorize,
  InvalidAccessTokenError,
  InvalidCredentialsError,
  isStorableText,
  isWellFormedId,
  type Capability,
  type Logger,
  type Principal,
} from '../../core/index.ts';
import {
  authenticate,
  authenticateSession,
  isCsrfTokenOf,
  type DomainDeps,
  type SessionContext,
} from '../../domain/index.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The capability (or any of several) a route needs; omitted means "any authenticated account". */
    capability?: Capability | readonly Capability[];
    /** True for the few routes that need no credentials (the OpenAPI document, sign-in, the dashboard's files). */
    public?: boolean;
  }
  interface FastifyRequest {
    principal: Principal;
    /** The dashboard session the request came with; null under HTTP Basic. */
    session: SessionContext | null;
  }
}

export const SESSION_COOKIE = 'gantry_session';
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** API keys Gantry issues are ~45 characters; anything far longer is not one. */
const MAX_KEY_LENGTH = 1024;

/**
 * `Basic base64(id:key)` → the pair, or null when it is not one Gantry could have issued: not
 * UTF-8, an ID that is not shaped like an ID, a key with NUL or of absurd length. Such text never
 * reaches a query.
 */
export function parseBasic(header: string | undefined): { id: string; key: string } | null {
  if (!header) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=_-]{1,2048})\s*$/i.exec(header);
  if (!match?.[1]) return null;
  let decoded: string;
  try {
    decoded = utf8.decode(Buffer.from(match[1], 'base64'));
  } catch {
    return null;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  const id = decoded.slice(0, colon);
  const key = decoded.slice(colon + 1);
  if (!isWellFormedId(id) || key.length > MAX_KEY_LENGTH || !isStorableText(key)) return null;
  return { id, key };
}

/** The session token in a Cookie header, if any. */
export function sessionTokenOf(cookieHeader: string | undefined): string | null {
  for (const part of (cookieHeader ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || null;
  }
  return null;
}

/** Sets (or, with null, clears) the session cookie: HttpOnly, SameSite=Strict, Secure over HTTPS. */
export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  cookie: { token: string; maxAgeSeconds: number } | null,
): void {
  const attributes = [`${SESSION_COOKIE}=${cookie?.token ?? ''}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  attributes.push(`Max-Age=${Math.max(0, Math.floor(cookie?.maxAgeSeconds ?? 0))}`);
  if (request.protocol === 'https') attributes.push('Secure');
  reply.header('set-cookie', attributes.join('; '));
}

/** host[:port] as a URL spells it (a default port dropped), or null when it does not parse. */
function normalHost(protocol: string, host: string): string | null {
  try {
    return new URL(`${protocol}://${host}`).host;
  } catch {
    return null;
  }
}

/**
 * Refuses a browser request sent from another origin: `Origin` (sent by browsers on every
 * state-changing request) must name this host, and `Sec-Fetch-Site` must not be cross-site.
 */
export function assertSameOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin !== undefined) {
    let sent: URL | null = null;
    try {
      sent = new URL(origin);
    } catch {
      sent = null;
    }
    // An opaque origin ('null': sandboxed frames, file: pages) is never this server.
    const own = normalHost(sent?.protocol.replace(':', '') ?? 'http', request.headers.host ?? '');
    if (sent === null || origin === 'null' || own === null || sent.host !== own)
      throw new InvalidAccessTokenError('Cross-origin request refused: Origin does not match this server');
  }
  if (request.headers['sec-fetch-site'] === 'cross-site')
    throw new InvalidAccessTokenError('Cross-origin request refused: Sec-Fetch-Site is cross-site');
}

async function identify(
  request: FastifyRequest,
  deps: DomainDeps,
): Promise<{ principal: Principal; session: SessionContext | null }> {
  const header = request.headers.authorization;
  const token = header === undefined ? sessionTokenOf(request.headers.cookie) : null;
  if (token === null) {
    const credentials = parseBasic(header);
    if (!credentials) throw new InvalidCredentialsError('Missing or malformed HTTP Basic credentials');
    return { principal: await authenticate(deps, credentials.id, credentials.key), session: null };
  }
  if (!SAFE_METHODS.has(request.method)) {
    assertSameOrigin(request);
    const sent = request.headers[CSRF_HEADER];
    if (!isCsrfTokenOf(token, typeof sent === 'string' ? sent : undefined))
      throw new InvalidAccessTokenError(`Missing or wrong CSRF token: send the session's token in X-CSRF-Token`);
  }
  return authenticateSession(deps, token);
}

export function registerAuthentication(app: FastifyInstance): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.decorateRequest('session', null);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const config = request.routeOptions.config;
    if (config.public || request.is404) return;
    const { principal, session } = await identify(request, request.deps);
    request.principal = principal;
    request.session = session;
    // Added to the request's own logger (Fastify made it for this request): a child logger per
    // request cost ~2 % of the CPU of a server answering thousands of polls a second. Fastify's
    // null logger (logger: false) has no bindings.
    (request.log as Partial<Pick<Logger, 'setBindings'>>).setBindings?.({
      serviceAccountId: principal.serviceAccountId,
    });
    if (config.capability) authorize(principal, config.capability);
  });
}
