/**
 * Authentication (spec §5): HTTP Basic with service-account ID and API key on every route that
 * is not marked public. The route's declared capability is checked here coarsely (does the
 * account hold it at all?); the domain then checks it against the project and environments the
 * request touches, with the same `authorize`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  authorize,
  InvalidCredentialsError,
  isStorableText,
  isWellFormedId,
  type Capability,
  type Principal,
} from '../../core/index.ts';
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
