/**
 * Serves the dashboard's built files (dashboard/ → dist/dashboard, issue #11) at `/`: the page's
 * deep links all answer index.html, hashed assets are cached for good. The API stays under /api.
 * The files hold no secret, so they are public; everything they call is authenticated.
 */
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { PageNotFound } from './errors.ts';

/** The page's own routes (dashboard/src/router.ts): a reload or a shared link lands on the page. */
const PAGE_ROUTES = ['/', '/sign-in', '/workspaces/*', '/projects/*', '/deployments/*'];

/** No inline script, nothing from elsewhere, no framing: log text can never become script. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

export interface DashboardFiles {
  register(app: FastifyInstance): Promise<void>;
  /**
   * A browser opening a path the page does not know (a typo, an old bookmark) gets the page, which
   * says "No such page." with its navigation, under status 404 — not the API's JSON. Only for a GET
   * that asks for HTML outside /api and /assets: a client of the API always gets the spec's body.
   */
  pageNotFound: PageNotFound;
}

export function dashboardFiles(dir: string): DashboardFiles {
  const page = async (_request: unknown, reply: FastifyReply) => {
    reply
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY');
    if (!fs.existsSync(path.join(dir, 'index.html')))
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The dashboard is not built: run `npm run build:dashboard` (npm start does it when needed).\n');
    return reply.header('cache-control', 'no-cache').sendFile('index.html');
  };
  return {
    async register(app) {
      await app.register(fastifyStatic, { root: dir, serve: false });
      const options = { schema: { hide: true }, config: { public: true } } as const;
      for (const url of PAGE_ROUTES) app.get(url, options, page);
      app.get<{ Params: { '*': string } }>('/assets/*', options, (request, reply) =>
        reply
          .header('x-content-type-options', 'nosniff')
          .sendFile(`assets/${request.params['*']}`, { immutable: true, maxAge: '365d' }),
      );
    },
    pageNotFound(request, reply) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
      const pathname = request.url.split('?')[0] ?? '';
      if (pathname === '/api' || pathname.startsWith('/api/') || pathname.startsWith('/assets/')) return undefined;
      if (!(request.headers.accept ?? '').includes('text/html')) return undefined;
      return page(request, reply.code(404));
    },
  };
}
