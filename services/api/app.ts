/**
 * buildApp(deps): the whole HTTP API as a Fastify instance, used by main.ts and by every test.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { Ajv } from 'ajv';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Capability, Logger, Metrics } from '../core/index.ts';
import { appDeps, registerAudit } from './plugins/audit.ts';
import { registerAuthentication } from './plugins/auth.ts';
import { dashboardFiles } from './plugins/dashboard-files.ts';
import { clientError, frameworkError, registerErrorHandling } from './plugins/errors.ts';
import { registerInputNormalization } from './plugins/normalize-input.ts';
import { registerReadPriority } from './plugins/read-priority.ts';
import { registerRoutes } from './routes/index.ts';
import type { ApiDeps } from './routes/route-types.ts';
import { ErrorBody } from './schemas.ts';

export interface BuildAppOptions {
  logger: Logger | false;
  /** The dashboard's built files (dist/dashboard), served at `/`; omitted: API only. */
  dashboardDir?: string;
  /** Where request durations are observed (by route template, never the raw URL). */
  metrics?: Metrics;
}

/** One registered route, as tests that sweep every endpoint (roles, bad input) see it. */
export interface RouteEntry {
  method: string;
  url: string;
  capability: Capability | readonly Capability[] | undefined;
  isPublic: boolean;
  bodySchema: unknown;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeCatalog: RouteEntry[];
  }
}

/**
 * Bodies are validated strictly (a number is not a string: wrong types are 400), query strings
 * with coercion (everything arrives as text there).
 */
function validators() {
  const common = {
    useDefaults: true,
    removeAdditional: true,
    allErrors: false,
    strict: false,
    validateFormats: false,
  } as const;
  return { body: new Ajv({ ...common, coerceTypes: false }), query: new Ajv({ ...common, coerceTypes: 'array' }) };
}

export async function buildApp(rootDeps: ApiDeps, options: BuildAppOptions): Promise<FastifyInstance> {
  // Hooks set on app.deps later (the composition root, tests) land on rootDeps; each request has
  // its own request.deps, whose store is its transaction while a change runs (plugins/audit.ts).
  const deps = appDeps(rootDeps);
  const app = Fastify({
    // Widened on purpose: typed as pino's Logger, the instance's route types no longer fit FastifyInstance.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    ...(options.logger ? { loggerInstance: options.logger as FastifyBaseLogger } : { logger: false }),
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    bodyLimit: 4 * 1024 * 1024,
    // Every error has the spec's body, also those raised before routing or by Node's HTTP parser.
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    routerOptions: { ignoreTrailingSlash: true, caseSensitive: false },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const ajv = validators();
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? ajv.body : ajv.query).compile(schema));
  // Fastify parses text/plain by default; JSON endpoints must answer 415 to it (spec §7.1).
  app.removeContentTypeParser('text/plain');
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-request-id', request.id);
    return payload;
  });
  const { metrics } = options;
  if (metrics) {
    app.addHook('onResponse', async (request, reply) => {
      // The template (/api/project/:id…), not the URL: a label never carries ids or tenant text.
      const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
      metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    });
  }

  app.decorate('deps', deps);
  const catalog: RouteEntry[] = [];
  app.decorate('routeCatalog', catalog);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      catalog.push({
        method,
        url: route.url,
        capability: route.config?.capability,
        isPublic: route.config?.public === true,
        bodySchema: route.schema?.body,
      });
    }
  });
  app.addSchema(ErrorBody);
  // First of the onRequest hooks: a read waiting for its turn has cost nothing yet (no auth, no audit).
  registerReadPriority(app);
  const dashboard = options.dashboardDir ? dashboardFiles(options.dashboardDir) : undefined;
  registerErrorHandling(app, { pageNotFound: dashboard?.pageNotFound });
  registerInputNormalization(app);
  // Before authentication: it sets request.deps, which authentication reads.
  registerAudit(app, rootDeps);
  registerAuthentication(app);

  await app.register(swagger, {
    // Shared schemas keep their $id as their name in the document (ErrorBody, not def-0).
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gantry API',
        version: '1',
        description: 'Deployment automation; compatible with the Jaws Deploy REST API.',
      },
      components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' } } },
      security: [{ basic: [] }],
    },
  });
  app.get('/api/openapi.json', { schema: { hide: true }, config: { public: true } }, async () => app.swagger());

  await app.register(registerRoutes);
  if (dashboard) await dashboard.register(app);
  await app.ready();
  return app;
}
