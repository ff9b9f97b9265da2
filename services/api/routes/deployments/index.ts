/** /api/release/deploy, /api/release/promote, /api/deployment… (spec §4.2–4.5, contract §5). */
import { Type } from '@sinclair/typebox';
import { Capability, ticksToDate } from '../../../core/index.ts';
import {
  cancelDeployment,
  deployRelease,
  getDeployment,
  getDeploymentTargets,
  listDeployments,
  promoteRelease,
} from '../../../domain/index.ts';
import type { DeploymentView } from '../../../domain/index.ts';
import type { Deployment } from '../../../store/index.ts';
import { errorResponses, Id, IdempotencyHeaders } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import { logItemsJson } from './log-json.ts';
import {
  DeployBody,
  DeploymentQuery,
  DeploymentResponse,
  DeployResponse,
  ListQuery,
  ListResponse,
  PromoteBody,
  PromoteResponse,
  StatusSchema,
  TargetsResponse,
} from './schemas.ts';

const tags = ['deployments'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);
/** "ISO 8601 timestamp with UTC offset" (spec §2.2): explicit +00:00 rather than Z. */
const isoOffset = (d: Date) => d.toISOString().replace('Z', '+00:00');

/** The `status` object of GET /api/deployment (also the data of the SSE `status` and `end` events). */
export function toStatus(d: Deployment) {
  return {
    Status: d.status,
    ErrorCount: d.errorCount,
    WarningCount: d.warningCount,
    LastLogDate: d.lastLogTick > 0n ? isoOffset(ticksToDate(d.lastLogTick)) : null,
    LastLogDateTick: d.lastLogTick,
    LastUpdate: d.lastUpdateUtc.toISOString(),
    CancellationRequestedDate: iso(d.cancellationRequestedUtc),
    LastAttemptDate: iso(d.lastAttemptUtc),
    CompleteDate: iso(d.completedUtc),
  };
}

export const deploymentRoutes: Routes = async (app) => {
  /**
   * A view's answer, serialized once: the domain hands out the same view while it caches a
   * finished deployment's read (domain/read-caches.ts), so polls of it cost no serialization.
   */
  const serialized = new WeakMap<DeploymentView, Buffer>();

  app.post(
    '/api/release/deploy',
    {
      schema: {
        tags,
        summary: 'Deploys an existing release to environments or a lifecycle phase',
        body: DeployBody,
        headers: IdempotencyHeaders,
        response: { 200: DeployResponse, ...errorResponses, 409: Type.Ref('ErrorBody') },
      },
      config: { capability: Capability.Deploy },
    },
    async (request) =>
      deployRelease(request.deps, request.principal, request.body, {
        idempotencyKey: request.headers['idempotency-key'],
      }),
  );

  app.post(
    '/api/release/promote',
    {
      schema: {
        tags,
        summary: 'Deploys a release identified by project and version',
        body: PromoteBody,
        headers: IdempotencyHeaders,
        response: { 200: PromoteResponse, ...errorResponses, 409: Type.Ref('ErrorBody') },
      },
      config: { capability: Capability.Deploy },
    },
    async (request) =>
      promoteRelease(request.deps, request.principal, request.body, {
        idempotencyKey: request.headers['idempotency-key'],
      }),
  );

  app.get(
    '/api/deployment',
    {
      schema: {
        tags,
        summary: 'Status and logs of a deployment',
        querystring: DeploymentQuery,
        response: { 200: DeploymentResponse, ...errorResponses },
      },
      config: { capability: [Capability.View, Capability.Deploy] },
    },
    async (request, reply) => {
      const view = await getDeployment(request.deps, request.principal, request.query);
      let body = serialized.get(view);
      if (!body) {
        // The status through its schema; the lines written by hand (log-json.ts): a page holds
        // thousands. A string is sent as it is.
        const status = reply.compileSerializationSchema(StatusSchema)(toStatus(view.deployment));
        // Gantry's additions after the spec's fields (clients that do not know them skip them).
        const waiting = `,"waitingReason":${JSON.stringify(view.waiting.waitingReason)},"queuePosition":${JSON.stringify(view.waiting.queuePosition)},"environmentName":${JSON.stringify(view.deployment.environmentName)}}`;
        body = Buffer.concat([
          Buffer.from(`{"status":${status},"logs":`),
          ...logItemsJson(view.logs ?? []),
          Buffer.from(waiting),
        ]);
        serialized.set(view, body);
      }
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );

  app.post(
    '/api/deployment/cancel',
    {
      schema: {
        tags,
        summary: 'Cancels a pending (queued or running) deployment',
        body: Type.Object({ deploymentId: Id }),
        response: errorResponses,
      },
      config: { capability: Capability.Deploy },
    },
    async (request, reply) => {
      await cancelDeployment(request.deps, request.principal, request.body.deploymentId);
      return reply.send();
    },
  );

  app.get(
    '/api/deployment/list',
    {
      schema: {
        tags,
        summary: 'Pages through deployments of a workspace, project or release; polls for changes',
        querystring: ListQuery,
        response: { 200: ListResponse, ...errorResponses },
      },
      config: { capability: [Capability.View, Capability.Deploy] },
    },
    async (request) => {
      const page = await listDeployments(request.deps, request.principal, request.query);
      return {
        deployments: page.items.map((d) => ({
          deploymentId: d.id,
          releaseId: d.releaseId,
          projectId: d.projectId,
          version: page.versions.get(d.releaseId) ?? '',
          environmentId: d.environmentId,
          environmentName: d.environmentName,
          status: d.status,
          automatic: d.automatic,
          scheduledUtc: iso(d.scheduledFor),
          createdUtc: d.createdUtc.toISOString(),
          completedUtc: iso(d.completedUtc),
          lastChangeTick: d.changeTick,
          waitingReason: page.waits.get(d.id)?.waitingReason ?? null,
          queuePosition: page.waits.get(d.id)?.queuePosition ?? null,
          requiredApprovals: d.requiredApprovals,
          rollback: d.rolledBackFromReleaseId !== null,
          rolledBackFromReleaseId: d.rolledBackFromReleaseId,
        })),
        totalCount: page.totalCount,
        lastChangeTick: page.lastChangeTick,
      };
    },
  );

  app.get(
    '/api/deployment/targets',
    {
      schema: {
        tags,
        summary: 'Which machines each step matched and which ran it',
        querystring: Type.Object({ deploymentId: Id }),
        response: { 200: TargetsResponse, ...errorResponses },
      },
      config: { capability: [Capability.View, Capability.Deploy] },
    },
    async (request) => {
      const view = await getDeploymentTargets(request.deps, request.principal, request.query.deploymentId);
      return {
        deploymentId: view.deployment.id,
        steps: view.steps.map((s) => ({
          projectStepId: s.stepId,
          name: s.name,
          targets: s.tasks.map((t) => ({
            machineId: t.machineId,
            machineName: t.machineName,
            status: t.status,
            startedUtc: iso(t.startedUtc),
            finishedUtc: iso(t.finishedUtc),
            exitCode: t.exitCode,
          })),
        })),
      };
    },
  );
};
