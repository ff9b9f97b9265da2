/**
 * GET /api/agent/install.sh and the agent bundle it downloads. Both public: the script holds no
 * secret (the token comes on its command line) and the bundle is the open-source agent. The script
 * is this folder's install.sh with the bundle's version, name and sha256 filled in.
 */
import { readFileSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import { ErrorCode } from '../../../core/index.ts';
import type { AgentDistribution } from '../../../packages/index.ts';
import { sendError } from '../../plugins/errors.ts';
import type { Routes } from '../route-types.ts';

const tags = ['agents'];
const TEMPLATE = readFileSync(new URL('./install.sh', import.meta.url), 'utf8');
/** A Host header that may be written into the script as it is (anything else: GANTRY_PUBLIC_URL). */
const PLAIN_HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export function renderInstallScript(distribution: AgentDistribution, gantryUrl: string): string {
  const values: Record<string, string> = {
    GANTRY_URL: gantryUrl.replace(/\/+$/, ''),
    AGENT_VERSION: distribution.version,
    BUNDLE_NAME: distribution.archiveName,
    BUNDLE_SHA256: distribution.sha256,
  };
  return TEMPLATE.replace(/@@([A-Z0-9_]+)@@/g, (whole, key: string) => values[key] ?? whole);
}

export const agentRoutes: Routes = async (app) => {
  const unavailable = (reply: Parameters<typeof sendError>[0], requestId: string) =>
    sendError(reply, 503, {
      error: 'No agent bundle on this control plane: build it with npm run build:agent (npm start does) and restart',
      errorcode: ErrorCode.UnknownError,
      requestid: requestId,
    });

  app.get(
    '/api/agent/install.sh',
    {
      schema: {
        tags,
        summary:
          'The agent install script (holds no secret): curl -fsSL …/api/agent/install.sh | sudo sh -s -- --server H:P --token T',
        security: [],
        produces: ['text/x-shellscript'],
        response: { 200: Type.String(), 503: Type.Ref('ErrorBody') },
      },
      config: { public: true },
    },
    async (request, reply) => {
      const distribution = request.deps.agentDistribution;
      if (!distribution) return unavailable(reply, request.id);
      // The bundle is fetched the way this script was (the address the caller used works for it).
      const origin = PLAIN_HOST.test(request.host) ? `${request.protocol}://${request.host}` : request.deps.publicUrl;
      return reply
        .type('text/x-shellscript; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(renderInstallScript(distribution, origin ?? `${request.protocol}://localhost`));
    },
  );

  app.get(
    '/api/agent/bundle/:file',
    {
      schema: {
        tags,
        summary: 'The agent bundle (gantry-agent-<version>.tar.gz: the single-file agent and agent.proto)',
        security: [],
        params: Type.Object({ file: Type.String({ maxLength: 200 }) }),
        response: { 200: Type.Any(), 400: Type.Ref('ErrorBody'), 503: Type.Ref('ErrorBody') },
      },
      config: { public: true },
    },
    async (request, reply) => {
      const distribution = request.deps.agentDistribution;
      if (!distribution) return unavailable(reply, request.id);
      if (request.params.file !== distribution.archiveName) {
        return sendError(reply, 400, {
          error: `Invalid file: this control plane serves ${distribution.archiveName} (agent ${distribution.version})`,
          errorcode: ErrorCode.InvalidParameter,
          requestid: request.id,
          validationErrors: [{ property: 'file', messages: [`not ${distribution.archiveName}`] }],
        });
      }
      return reply
        .type('application/gzip')
        .header('content-disposition', `attachment; filename="${distribution.archiveName}"`)
        .header('x-checksum-sha256', distribution.sha256)
        .send(distribution.bytes);
    },
  );

  app.get(
    '/api/agent/version',
    {
      schema: {
        tags,
        summary: 'The agent version this control plane ships, with its bundle name and sha256',
        security: [],
        response: {
          200: Type.Object({ version: Type.String(), bundle: Type.String(), sha256: Type.String() }),
          503: Type.Ref('ErrorBody'),
        },
      },
      config: { public: true },
    },
    async (request, reply) => {
      const distribution = request.deps.agentDistribution;
      if (!distribution) return unavailable(reply, request.id);
      return { version: distribution.version, bundle: distribution.archiveName, sha256: distribution.sha256 };
    },
  );
};
