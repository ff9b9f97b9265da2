import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ReadinessCheck } from '../../core/index.ts';
import type { DomainDeps } from '../../domain/index.ts';
import type { PackageService } from '../../packages/index.ts';

/** What the HTTP layer receives: the use-case dependencies plus the package store. */
export type ApiDeps = DomainDeps & {
  packages: PackageService;
  /** host:port agents connect to, shown in the dashboard's registration command. */
  agentServer?: string;
  /** What GET /readyz checks (PostgreSQL, migrations, bus, gateway), composed by server.ts; none: the API alone. */
  readiness?: readonly ReadinessCheck[];
};

declare module 'fastify' {
  interface FastifyInstance {
    /** The use-case dependencies, decorated once on the root instance by buildApp. */
    deps: ApiDeps;
  }
}

/** One resource's routes: a Fastify plugin typed by TypeBox schemas. */
export type Routes = FastifyPluginAsyncTypebox;
