/** GET /api/audit: the audit log (issue #14), newest first, paged and filtered, scoped like every read. */
import { Type } from '@sinclair/typebox';
import { Capability, InvalidParameterError } from '../../../core/index.ts';
import { listAuditEvents } from '../../../domain/index.ts';
import { errorResponses, Id, Nullable, PageQuery } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

const AuditEventSchema = Type.Object({
  eventId: Id,
  occurredUtc: Type.String({ format: 'date-time' }),
  workspaceId: Nullable(Id),
  accountId: Nullable(Type.String()),
  accountName: Nullable(Type.String()),
  action: Type.String({
    description: 'create, update, delete, deploy, promote, cancel, clone, sign-in, sign-in-failed, …',
  }),
  resourceType: Type.String({ description: "The route's resource path, e.g. project, project/step, release" }),
  resourceId: Nullable(Type.String()),
  before: Type.Unknown({ description: 'The resource as the API showed it before (no secrets); null when unknown' }),
  after: Type.Unknown({
    description:
      'The resource after, or the answer (no secrets); for an update seen no other way: { changed: [fields] }',
  }),
  address: Nullable(Type.String({ description: 'The client address the request came from' })),
  requestId: Nullable(Type.String()),
  status: Type.Integer({ description: 'HTTP status of the answer' }),
});

const Instant = (description: string) => Type.String({ format: 'date-time', maxLength: 40, description });

function instant(value: string | undefined, property: string): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new InvalidParameterError(`${property} must be an ISO 8601 date and time`);
  return date;
}

export const auditRoutes: Routes = async (app) => {
  app.get(
    '/api/audit',
    {
      schema: {
        tags: ['audit'],
        summary:
          'Lists audit events newest first: changes through the API and sign-in attempts. With workspaceId (or for a workspace account, by default) the events of that workspace (View); an organization-wide Admin without workspaceId: events outside any workspace (service accounts, settings, sign-ins)',
        querystring: Type.Object({
          workspaceId: Type.Optional(Id),
          resourceType: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          resourceId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          accountId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          from: Type.Optional(Instant('Events at or after this time')),
          to: Type.Optional(Instant('Events before this time')),
          ...PageQuery,
        }),
        response: {
          200: Type.Object({ events: Type.Array(AuditEventSchema), totalCount: Type.Integer() }),
          ...errorResponses,
        },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listAuditEvents(request.deps, request.principal, {
        ...request.query,
        from: instant(request.query.from, 'from'),
        to: instant(request.query.to, 'to'),
      });
      return {
        events: page.items.map((e) => ({
          eventId: e.id,
          occurredUtc: e.occurredUtc.toISOString(),
          workspaceId: e.workspaceId,
          accountId: e.accountId,
          accountName: e.accountName,
          action: e.action,
          resourceType: e.resourceType,
          resourceId: e.resourceId,
          before: e.before,
          after: e.after,
          address: e.address,
          requestId: e.requestId,
          status: e.status,
        })),
        totalCount: page.totalCount,
      };
    },
  );
};
