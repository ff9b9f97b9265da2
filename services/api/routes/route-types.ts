import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DomainDeps } from '../../domain/index.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The use-case dependencies, decorated once on the root instance by buildApp. */
    deps: DomainDeps;
  }
}

/** One resource's routes: a Fastify plugin typed by TypeBox schemas. */
export type Routes = FastifyPluginAsyncTypebox;
