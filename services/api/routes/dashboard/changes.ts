/**
 * GET /api/dashboard/changes?workspaceId (issue #11): Server-Sent Events telling the overview when
 * any deployment of the workspace changed — `event: changed`, data `{"lastChangeTick": <int64>}`
 * (the first one is the current tick), `: keepalive` every 15 s — so the page re-reads its one
 * aggregate when something moved instead of polling it.
 */
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { Capability } from '../../../core/index.ts';
import { followWorkspace, type WorkspaceChange } from '../../../domain/index.ts';
import { errorResponses, Id } from '../../schemas.ts';
import { Int64 } from '../deployments/schemas.ts';
import type { Routes } from '../route-types.ts';

const ChangedSchema = Type.Object({ lastChangeTick: Int64 });

export const dashboardChangeRoutes: Routes = async (app) => {
  app.get(
    '/api/dashboard/changes',
    {
      schema: {
        tags: ['dashboard'],
        summary: "Follows a workspace's deployments: an SSE `changed` event whenever any of them changes",
        querystring: Type.Object({ workspaceId: Id }),
        produces: ['text/event-stream'],
        response: {
          200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: Type.String() } } },
          ...errorResponses,
        },
      },
      config: { capability: Capability.View },
    },
    async (request, reply) => {
      const abort = new AbortController();
      const changes = await followWorkspace(request.deps, request.principal, request.query.workspaceId, abort.signal);
      reply.raw.once('close', () => abort.abort());
      const changed = reply.compileSerializationSchema(ChangedSchema);
      const format = (change: WorkspaceChange) =>
        change.type === 'changed'
          ? `event: changed\ndata: ${changed({ lastChangeTick: change.lastChangeTick })}\n\n`
          : ': keepalive\n\n';
      async function* text() {
        for await (const change of changes) yield format(change);
      }
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache, no-transform')
        .header('x-accel-buffering', 'no')
        .send(Readable.from(text(), { objectMode: false, highWaterMark: 1 }));
    },
  );
};
