/**
 * GET /api/deployment/events (issue #11): a deployment's status and log lines as Server-Sent
 * Events. The wire format (the CLI and the dashboard code against it):
 *
 *   event: tail              data: {"earlierLines": n}, first, only when `tail` was asked for
 *   event: deployment        data: {"deploymentId", "projectId", "releaseId", "environmentId",
 *                            "environmentName"}, once, before the first status: what a follower
 *                            names the deployment by before any log line says where it deploys
 *   event: status            data: the `status` object of GET /api/deployment
 *   id: <tick of the batch's last line>
 *   event: logs              data: [log items exactly as GET /api/deployment's `logs`]
 *   event: status            again whenever the status changes
 *   event: end               data: the final status, after every line; then the response ends
 *   : keepalive              a comment every 15 s without other output
 *
 * Resumable: `Last-Event-ID` (or `after=<tick>`) continues with lines strictly after that tick.
 * `tail=<n>` (not resuming) starts with the last n lines, or a few more, instead of the first: the
 * dashboard opens a log of millions of lines at its end and keeps a bounded part of it.
 * `level=Warning|Error` sends only the lines of that level and above, from the whole log: the
 * dashboard's level filter over a log longer than the part it holds.
 */
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { Capability, LogLevelFloor } from '../../../core/index.ts';
import { followDeployment, type DeploymentEvent } from '../../../domain/index.ts';
import type { Deployment } from '../../../store/index.ts';
import { errorResponses, Id, OneOf, TicksText } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import { toStatus } from './index.ts';
import { logItemsJson } from './log-json.ts';
import { StatusSchema } from './schemas.ts';

const EVENT_END = Buffer.from('\n\n');

export const deploymentEventRoutes: Routes = async (app) => {
  app.get(
    '/api/deployment/events',
    {
      schema: {
        tags: ['deployments'],
        summary: 'Follows a deployment live: status and log lines as Server-Sent Events, ending when it is final',
        description:
          'Events: `deployment` (once, before the first status; data: its deploymentId, projectId, releaseId, environmentId and environmentName), `status` (data: the status object of GET /api/deployment), `logs` (id: the last line\'s CreatedUtcTick; data: an array of log items), `end` (data: the final status); with `tail`, first `tail` (data: `{"earlierLines": n}`, the lines before the first one sent). Resume with the Last-Event-ID header or `after`.',
        querystring: Type.Object({
          deploymentId: Id,
          after: Type.Optional(TicksText('.NET ticks: lines strictly after it (as Last-Event-ID)')),
          tail: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 1_000_000,
              description:
                'Start with the last this many lines (or a few more) instead of the first; ignored when resuming',
            }),
          ),
          level: Type.Optional(
            OneOf(LogLevelFloor, {
              description:
                'Only the lines of this level and above (Warning: warnings and errors); `tail` then counts those lines (Gantry extension)',
            }),
          ),
        }),
        produces: ['text/event-stream'],
        response: {
          200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: Type.String() } } },
          ...errorResponses,
        },
      },
      config: { capability: [Capability.View, Capability.Deploy] },
    },
    async (request, reply) => {
      const lastEventId = request.headers['last-event-id'];
      const abort = new AbortController();
      const events = await followDeployment(
        request.deps,
        request.principal,
        {
          deploymentId: request.query.deploymentId,
          after: request.query.after ?? (typeof lastEventId === 'string' ? lastEventId : undefined),
          tail: request.query.tail,
          level: request.query.level,
        },
        abort.signal,
      );
      // The client went away: stop waiting for the next change at once.
      reply.raw.once('close', () => abort.abort());
      const status = reply.compileSerializationSchema(StatusSchema);
      let introduced = false;
      // Sent once, before the first status (a resumed stream too: a follower that reconnects to
      // another replica, or a new process, may not know it yet).
      const introduce = (deployment: Deployment): string => {
        if (introduced) return '';
        introduced = true;
        const { id, projectId, releaseId, environmentId, environmentName } = deployment;
        const data = { deploymentId: id, projectId, releaseId, environmentId, environmentName };
        return `event: deployment\ndata: ${JSON.stringify(data)}\n\n`;
      };
      const format = (event: DeploymentEvent): string | Buffer => {
        switch (event.type) {
          case 'tail':
            return `event: tail\ndata: {"earlierLines":${event.earlierLines}}\n\n`;
          case 'status':
            return `${introduce(event.deployment)}event: status\ndata: ${status(toStatus(event.deployment))}\n\n`;
          case 'logs':
            return Buffer.concat([
              Buffer.from(`id: ${event.lines.at(-1)!.tick}\nevent: logs\ndata: `),
              ...logItemsJson(event.lines),
              EVENT_END,
            ]);
          case 'end':
            return `${introduce(event.deployment)}event: end\ndata: ${status(toStatus(event.deployment))}\n\n`;
          case 'keepalive':
            return ': keepalive\n\n';
        }
      };
      async function* text() {
        for await (const event of events) yield format(event);
      }
      // highWaterMark 1: the next page of lines is read only once the socket took the last one.
      const body = Readable.from(text(), { objectMode: false, highWaterMark: 1 });
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache, no-transform')
        .header('x-accel-buffering', 'no')
        .send(body);
    },
  );
};
