/**
 * /api/dashboard/* (issue #11): one read per dashboard page view, so a page's first paint is one
 * request whatever the size of the fleet. Same authentication, roles and workspace scoping as the
 * rest of the API (View to read); actions the account may not take come with the reason.
 */
import { Capability } from '../../../core/index.ts';
import {
  getDeploymentPage,
  getMachinesPage,
  getOverview,
  getProjectPage,
  getReleaseForm,
  getTopology,
  type Cell,
} from '../../../domain/index.ts';
import type { Environment } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  DeploymentPageQuery,
  DeploymentPageResponse,
  MachinesPageQuery,
  MachinesPageResponse,
  OverviewQuery,
  OverviewResponse,
  ProjectPageQuery,
  ProjectPageResponse,
  ReleaseFormQuery,
  ReleaseFormResponse,
  TopologyQuery,
  TopologyResponse,
} from './schemas.ts';

const tags = ['dashboard'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

const toEnvironment = (e: Environment) => ({
  environmentId: e.id,
  name: e.name,
  color: e.color,
  enabled: e.enabled,
  requiredApprovals: e.requiredApprovals,
});

function toCellDeployment(d: NonNullable<Cell['deployment']>) {
  return {
    deploymentId: d.deploymentId,
    releaseId: d.releaseId,
    version: d.version,
    status: d.status,
    automatic: d.automatic,
    requestedBy: d.requestedByName,
    createdUtc: d.createdUtc.toISOString(),
    completedUtc: iso(d.completedUtc),
    waitReason: d.waitReason,
  };
}

/** Which scope filters a variable value has, in words ("Production; step Deploy"). */
function scopeOf(
  value: { environmentsFilter: string[]; machineFilter: string[]; stepFilter: string[] },
  names: Map<string, string>,
) {
  const parts = [
    ...value.environmentsFilter.map((id) => names.get(id) ?? id),
    ...value.machineFilter.map((id) => `machine ${names.get(id) ?? id}`),
    ...value.stepFilter.map((id) => `step ${names.get(id) ?? id}`),
  ];
  return parts.length > 0 ? parts.join('; ') : 'unscoped';
}

export const dashboardRoutes: Routes = async (app) => {
  const read = { capability: Capability.View };

  app.get(
    '/api/dashboard/overview',
    {
      schema: {
        tags,
        summary: 'Projects × environments: the latest deployment of every cell of a page of projects',
        querystring: OverviewQuery,
        response: { 200: OverviewResponse, ...errorResponses },
      },
      config: read,
    },
    async (request) => {
      const view = await getOverview(request.deps, request.principal, request.query);
      return {
        workspace: { workspaceId: view.workspace.id, name: view.workspace.name },
        workspaces: view.workspaces.map((w) => ({ workspaceId: w.id, name: w.name })),
        environments: view.environments.map(toEnvironment),
        projects: view.projects.map(({ project, cells }) => ({
          projectId: project.id,
          name: project.name,
          cells: cells.map((c) => ({
            environmentId: c.environmentId,
            deployment: c.deployment ? toCellDeployment(c.deployment) : null,
          })),
        })),
        totalCount: view.totalCount,
      };
    },
  );

  app.get(
    '/api/dashboard/project',
    {
      schema: {
        tags,
        summary: "A project's releases, newest first, with each environment's latest deployment and availability",
        querystring: ProjectPageQuery,
        response: { 200: ProjectPageResponse, ...errorResponses },
      },
      config: read,
    },
    async (request) => {
      const view = await getProjectPage(request.deps, request.principal, request.query);
      return {
        project: {
          projectId: view.project.id,
          workspaceId: view.project.workspaceId,
          name: view.project.name,
          description: view.project.description,
          lifecycleName: view.lifecycleName,
        },
        environments: view.environments.map(toEnvironment),
        channels: view.channels,
        releases: view.releases.map(({ release, environments }) => ({
          releaseId: release.id,
          version: release.version,
          channelName: release.channelName,
          notes: release.notes,
          createdUtc: release.createdUtc.toISOString(),
          environments: environments.map((e) => ({
            environmentId: e.environmentId,
            deployment: e.deployment ? toCellDeployment(e.deployment) : null,
            available: e.available,
            reason: e.reason,
            deploy: e.deploy,
          })),
        })),
        totalCount: view.totalCount,
        createRelease: view.createRelease,
      };
    },
  );

  app.get(
    '/api/dashboard/release-form',
    {
      schema: {
        tags,
        summary:
          'What the create-release form offers: channels, package versions from the feed (latest first), a version',
        querystring: ReleaseFormQuery,
        response: { 200: ReleaseFormResponse, ...errorResponses },
      },
      config: read,
    },
    async (request) => {
      const view = await getReleaseForm(request.deps, request.principal, request.query.projectId);
      return {
        projectId: view.project.id,
        nextVersion: view.nextVersion,
        channels: view.channels,
        packages: view.packages,
        createRelease: view.createRelease,
      };
    },
  );

  app.get(
    '/api/dashboard/deployment',
    {
      schema: {
        tags,
        summary: 'A deployment with its timeline and its step × machine tree (rolling-group windows included)',
        querystring: DeploymentPageQuery,
        response: { 200: DeploymentPageResponse, ...errorResponses },
      },
      config: read,
    },
    async (request) => {
      const view = await getDeploymentPage(request.deps, request.principal, request.query.deploymentId);
      const d = view.deployment;
      return {
        deployment: {
          deploymentId: d.id,
          workspaceId: d.workspaceId,
          projectId: d.projectId,
          projectName: view.projectName,
          releaseId: d.releaseId,
          version: view.version,
          environmentId: d.environmentId,
          environmentName: d.environmentName,
          status: d.status,
          automatic: d.automatic,
          requestedBy: d.requestedBy?.name ?? null,
          createdUtc: d.createdUtc.toISOString(),
          startedUtc: iso(d.startedUtc),
          completedUtc: iso(d.completedUtc),
          cancellationRequestedUtc: iso(d.cancellationRequestedUtc),
          scheduledUtc: iso(d.scheduledFor),
          errorCount: d.errorCount,
          warningCount: d.warningCount,
          failureMessage: d.failureMessage,
          waitReason: view.waitReason,
        },
        steps: view.steps.map((s) => ({
          stepId: s.stepId,
          name: s.name,
          rollingGroup: s.rollingGroup,
          targets: s.targets.map((t) => ({
            taskId: t.id,
            machineId: t.machineId,
            machineName: t.machineName,
            status: t.status,
            startedUtc: iso(t.startedUtc),
            finishedUtc: iso(t.finishedUtc),
            exitCode: t.exitCode,
            message: t.message,
            window: t.window,
          })),
        })),
        cancel: view.cancel,
        waitingReason: view.waiting.waitingReason,
        queuePosition: view.waiting.queuePosition,
        approval: view.approval,
      };
    },
  );

  app.get(
    '/api/dashboard/machines',
    {
      schema: {
        tags,
        summary: 'Machines of a workspace with status, last contact, agent version, environments and tags',
        querystring: MachinesPageQuery,
        response: { 200: MachinesPageResponse, ...errorResponses },
      },
      config: read,
    },
    async (request) => {
      const view = await getMachinesPage(request.deps, request.principal, request.query);
      return {
        machines: view.items.map((m) => ({
          machineId: m.id,
          name: m.name,
          status: m.status,
          enabled: m.enabled,
          lastSeenUtc: iso(m.lastSeenUtc),
          agentVersion: m.agentVersion,
          os: m.os,
          hostname: m.hostname,
          environments: m.environments.map((e) => ({ environmentId: e.id, name: e.name })),
          tags: m.tags.map((t) => ({ tagId: t.id, name: t.name, color: t.color })),
        })),
        totalCount: view.totalCount,
        environments: view.environments.map(toEnvironment),
        addMachine: view.addMachine,
        agentServer: request.deps.agentServer ?? `${request.hostname.replace(/:\d+$/, '')}:8081`,
      };
    },
  );

  app.get(
    '/api/dashboard/topology',
    {
      schema: {
        tags,
        summary:
          "Read-only topology: environments, lifecycles and phases, a project's steps, rolling groups and variables",
        querystring: TopologyQuery,
        response: { 200: TopologyResponse, ...errorResponses },
      },
      config: read,
    },
    async (request) => {
      const view = await getTopology(request.deps, request.principal, request.query);
      const names = new Map<string, string>([
        ...view.environments.map((e) => [e.id, e.name] as const),
        ...(view.project?.steps.map((s) => [s.id, s.name] as const) ?? []),
      ]);
      return {
        environments: view.environments.map(toEnvironment),
        lifecycles: view.lifecycles.map((l) => ({
          lifecycleId: l.lifecycleId,
          name: l.name,
          phases: l.phases.map((p) => ({
            name: p.name,
            progressRequirement: p.progressRequirement,
            progressRequirementCount: p.progressRequirementCount,
            environments: p.environments.map((e) => ({
              environmentName: e.environmentName,
              howToTrigger: e.howToTrigger,
            })),
          })),
        })),
        projects: view.projects.map((p) => ({ projectId: p.id, name: p.name })),
        project: view.project && {
          projectId: view.project.project.id,
          name: view.project.project.name,
          steps: view.project.steps.map((s) => ({
            projectStepId: s.id,
            name: s.name,
            sortOrder: s.sortOrder,
            errorAction: s.errorAction,
            disabled: s.disabled,
            rollingGroupId: s.rollingGroupId,
            environmentIds: s.environmentIds,
          })),
          rollingGroups: view.project.rollingGroups.map((g) => ({
            rollingGroupId: g.id,
            name: g.name,
            windowSize: g.windowSize,
            machineOrder: g.machineOrder,
          })),
          variables: view.project.variables.map((v) => ({
            variableId: v.variableId,
            name: v.name,
            variableType: v.variableType,
            values: v.values.map((value) => ({
              value: v.variableType === 'Sensitive' ? '********' : (value.theValue ?? ''),
              scope: scopeOf(value, names),
            })),
          })),
        },
      };
    },
  );
};
