import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ReadinessCheck } from '../../core/index.ts';
import type { DomainDeps } from '../../domain/index.ts';
import type { AgentDistribution, PackageService } from '../../packages/index.ts';

/** What the HTTP layer receives: the use-case dependencies plus the package store. */
export type ApiDeps = DomainDeps & {
  packages: PackageService;
  /** host:port agents connect to, shown in the dashboard's registration command. */
  agentServer?: string;
  /** What GET /readyz checks (PostgreSQL, migrations, bus, gateway), composed by server.ts; none: the API alone. */
  readiness?: readonly ReadinessCheck[];
  /** The address clients reach this API at (GANTRY_PUBLIC_URL): the install command names it. */
  publicUrl?: string;
  /** The agent bundle GET /api/agent/install.sh installs; null or absent: none was built. */
  agentDistribution?: AgentDistribution | null;
};

declare module 'fastify' {
  interface FastifyInstance {
    /** The use-case dependencies, decorated once on the root instance by buildApp. */
    deps: ApiDeps;
  }
}

/** One resource's routes: a Fastify plugin typed by TypeBox schemas. */
export type Routes = FastifyPluginAsyncTypebox;
