/**
 * Release governance (issue #15), Gantry extensions beside the spec's API: approvals
 * (/api/deployment/approve, /reject, /approvals), rollback (/api/release/rollback) and
 * deployment freezes (/api/deployment/freeze). Same authentication, roles and workspace scoping.
 */
import { Capability } from '../../../core/index.ts';
import {
  approveDeployment,
  createFreeze,
  deleteFreeze,
  freezeEndsAt,
  getFreeze,
  listFreezes,
  listPendingApprovals,
  rejectDeployment,
  rollbackRelease,
  updateFreeze,
} from '../../../domain/index.ts';
import type { DeploymentFreeze } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedFreeze,
  CreateFreezeBody,
  DecisionBody,
  DecisionResponse,
  FreezeIdBody,
  FreezeIdQuery,
  FreezeList,
  FreezeSchema,
  ListFreezesQuery,
  PendingList,
  PendingQuery,
  RollbackBody,
  RollbackResponse,
  UpdateFreezeBody,
} from './schemas.ts';

const tags = ['governance'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toFreezeDto(f: DeploymentFreeze, now: Date) {
  return {
    freezeId: f.id,
    workspaceId: f.workspaceId,
    name: f.name,
    description: f.description,
    startUtc: iso(f.startUtc),
    endUtc: iso(f.endUtc),
    recurrence: f.recurrence,
    environmentIds: f.environmentIds,
    projectIds: f.projectIds,
    activeUntilUtc: iso(freezeEndsAt(f, now)),
  };
}

export const governanceRoutes: Routes = async (app) => {
  app.post(
    '/api/deployment/approve',
    {
      schema: {
        tags,
        summary: 'Approves a deployment that awaits approval (not the requester’s own)',
        body: DecisionBody,
        response: { 200: DecisionResponse, ...errorResponses },
      },
      config: { capability: Capability.ApproveDeployments },
    },
    async (request) => approveDeployment(request.deps, request.principal, request.body),
  );

  app.post(
    '/api/deployment/reject',
    {
      schema: {
        tags,
        summary: 'Rejects a deployment that awaits approval: it is cancelled, the comment in its log',
        body: DecisionBody,
        response: { 200: DecisionResponse, ...errorResponses },
      },
      config: { capability: Capability.ApproveDeployments },
    },
    async (request) => rejectDeployment(request.deps, request.principal, request.body),
  );

  app.get(
    '/api/deployment/approvals',
    {
      schema: {
        tags,
        summary: 'Deployments of a workspace awaiting approval, oldest first',
        querystring: PendingQuery,
        response: { 200: PendingList, ...errorResponses },
      },
      config: { capability: [Capability.View, Capability.ApproveDeployments] },
    },
    async (request) => {
      const page = await listPendingApprovals(request.deps, request.principal, request.query);
      return {
        approvals: page.items.map(({ deployment: d, version, approvals }) => ({
          deploymentId: d.id,
          projectId: d.projectId,
          releaseId: d.releaseId,
          version,
          environmentId: d.environmentId,
          environmentName: d.environmentName,
          requestedBy: d.requestedBy ? { serviceAccountId: d.requestedBy.id, name: d.requestedBy.name } : null,
          automatic: d.automatic,
          createdUtc: d.createdUtc.toISOString(),
          requiredApprovals: d.requiredApprovals,
          approvedBy: approvals
            .filter((a) => a.decision === 'Approved')
            .map((a) => ({
              serviceAccountId: a.accountId,
              name: a.accountName,
              comment: a.comment,
              createdUtc: a.createdUtc.toISOString(),
            })),
          waitingReason: d.waitingReason,
        })),
        totalCount: page.totalCount,
      };
    },
  );

  app.post(
    '/api/release/rollback',
    {
      schema: {
        tags,
        summary:
          'Redeploys, in one environment, the release that last completed there successfully before the current one',
        body: RollbackBody,
        response: { 200: RollbackResponse, ...errorResponses },
      },
      config: { capability: Capability.Deploy },
    },
    async (request) => rollbackRelease(request.deps, request.principal, request.body),
  );

  app.get(
    '/api/deployment/freeze',
    {
      schema: {
        tags,
        summary: 'Lists the deployment freezes of a workspace',
        querystring: ListFreezesQuery,
        response: { 200: FreezeList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listFreezes(request.deps, request.principal, request.query);
      const now = request.deps.clock.now();
      return { freezes: page.items.map((f) => toFreezeDto(f, now)), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/deployment/freeze/details',
    {
      schema: {
        tags,
        summary: 'Reads one deployment freeze',
        querystring: FreezeIdQuery,
        response: { 200: FreezeSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) =>
      toFreezeDto(await getFreeze(request.deps, request.principal, request.query.freezeId), request.deps.clock.now()),
  );

  app.post(
    '/api/deployment/freeze',
    {
      schema: {
        tags,
        summary: 'Creates a deployment freeze over environments (and optionally projects)',
        body: CreateFreezeBody,
        response: { 200: CreatedFreeze, ...errorResponses },
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request) => createFreeze(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/deployment/freeze',
    {
      schema: { tags, summary: 'Changes a deployment freeze', body: UpdateFreezeBody, response: errorResponses },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await updateFreeze(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/deployment/freeze',
    {
      schema: { tags, summary: 'Deletes a deployment freeze', body: FreezeIdBody, response: errorResponses },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await deleteFreeze(request.deps, request.principal, request.body.freezeId);
      return reply.send();
    },
  );
};
