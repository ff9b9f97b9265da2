/**
 * GET /healthz (the process answers) and GET /readyz (it can serve: PostgreSQL reachable,
 * migrations current, bus connected, gateway listening — each named with why not). Public, for
 * load balancers, Kubernetes and the Docker HEALTHCHECK; not part of the Jaws API (hidden from OpenAPI).
 */
import { checkReadiness } from '../../../core/index.ts';
import type { Routes } from '../route-types.ts';

export const healthRoutes: Routes = async (app) => {
  app.get('/healthz', { schema: { hide: true }, config: { public: true } }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });

  app.get('/readyz', { schema: { hide: true }, config: { public: true } }, async (request, reply) => {
    const report = await checkReadiness(app.deps.readiness ?? []);
    if (!report.ready) request.log.warn({ checks: report.checks }, 'not ready');
    reply.header('cache-control', 'no-store');
    return reply.code(report.ready ? 200 : 503).send(report);
  });
};
