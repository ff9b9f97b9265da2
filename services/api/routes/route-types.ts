import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DomainDeps } from '../../domain/index.ts';
import type { PackageService } from '../../packages/index.ts';

/** What the HTTP layer receives: the use-case dependencies plus the package store. */
export type ApiDeps = DomainDeps & {
  packages: PackageService;
  /** host:port agents connect to, shown in the dashboard's registration command. */
  agentServer?: string;
  /**
   * SHA-256 fingerprint of the certificate agents pin (GANTRY_AGENT_CA_FINGERPRINT), returned with
   * every registration token; null when the agent gateway serves plaintext (GANTRY_GRPC_INSECURE=1).
   */
  agentCaFingerprint?: string | null;
};

declare module 'fastify' {
  interface FastifyInstance {
    /** The use-case dependencies, decorated once on the root instance by buildApp. */
    deps: ApiDeps;
  }
}

/** One resource's routes: a Fastify plugin typed by TypeBox schemas. */
export type Routes = FastifyPluginAsyncTypebox;
