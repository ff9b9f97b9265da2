/**
 * GET /api/deployment/log: a deployment's whole log as plain text, one line per log item
 * (`<CreatedUtc> <LogLevel> <Data>`, escape sequences taken out), streamed a page at a time under
 * the socket's backpressure: the dashboard's "Download raw log" for a log of any length.
 */
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { Capability } from '../../../core/index.ts';
import { downloadDeploymentLog } from '../../../domain/index.ts';
import type { LogEntry } from '../../../store/index.ts';
import { errorResponses, Id } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

// CSI sequences (ESC [ … final byte) and lone escapes: matching the escape character is the point.
// eslint-disable-next-line no-control-regex
const ESCAPE = /\u001b\[[0-9;]*[A-Za-z]|\u001b/g;

/** One log item as a line of the text download. */
export function logLineText(entry: LogEntry): string {
  const data = entry.data.includes('\u001b') ? entry.data.replace(ESCAPE, '') : entry.data;
  return `${entry.createdUtc.toISOString()} ${entry.level.padEnd(11)} ${data}\n`;
}

export const deploymentLogDownloadRoutes: Routes = async (app) => {
  app.get(
    '/api/deployment/log',
    {
      schema: {
        tags: ['deployments'],
        summary: "Downloads a deployment's whole log as plain text",
        description:
          'One line per log item: CreatedUtc, LogLevel and Data (escape sequences removed), up to the last line stored when the download began.',
        querystring: Type.Object({ deploymentId: Id }),
        produces: ['text/plain'],
        response: {
          200: { description: 'text/plain', content: { 'text/plain': { schema: Type.String() } } },
          ...errorResponses,
        },
      },
      config: { capability: [Capability.View, Capability.Deploy] },
    },
    async (request, reply) => {
      const { deploymentId, pages } = await downloadDeploymentLog(
        request.deps,
        request.principal,
        request.query.deploymentId,
      );
      // A client that goes away destroys the stream, which returns this generator and so `pages`.
      async function* text() {
        for await (const page of pages) yield Buffer.from(page.map(logLineText).join(''));
      }
      return reply
        .header('content-type', 'text/plain; charset=utf-8')
        .header('content-disposition', `attachment; filename="deployment-${deploymentId}.log"`)
        .send(Readable.from(text(), { objectMode: false, highWaterMark: 1 }));
    },
  );
};
