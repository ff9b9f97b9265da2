/**
 * Authentication (spec §5): HTTP Basic with service-account ID and API key on every route that
 * is not marked public. The route's declared capability is checked here coarsely (does the
 * account hold it at all?); the domain then checks it against the project and environments the
 * request touches, with the same `authorize`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorize, InvalidCredentialsError, type Capability, type Principal } from '../../core/index.ts';
import { authenticate, type DomainDeps } from '../../domain/index.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The capability (or any of several) a route needs; omitted means "any authenticated account". */
    capability?: Capability | readonly Capability[];
    /** True for the few routes that need no credentials (the OpenAPI document). */
    public?: boolean;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}

export function parseBasic(header: string | undefined): { id: string; key: string } | null {
  if (!header) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return { id: decoded.slice(0, colon), key: decoded.slice(colon + 1) };
}

export function registerAuthentication(app: FastifyInstance, deps: DomainDeps): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const config = request.routeOptions.config;
    if (config.public || request.is404) return;
    const credentials = parseBasic(request.headers.authorization);
    if (!credentials) throw new InvalidCredentialsError('Missing or malformed HTTP Basic credentials');
    request.principal = await authenticate(deps, credentials.id, credentials.key);
    request.log = request.log.child({ serviceAccountId: request.principal.serviceAccountId });
    if (config.capability) authorize(request.principal, config.capability);
  });
}
