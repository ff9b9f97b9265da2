/**
 * The dashboard's deployment, machines and topology pages (issue #11): one read each, authorized
 * like the API's reads of the same things.
 */
import {
  authorize,
  Capability,
  toPage,
  unknownId,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type {
  Deployment,
  DeploymentApproval,
  DeploymentTask,
  Environment,
  Project,
  Tag,
  Workspace,
} from '../store/index.ts';
import type { LifecycleReadModel } from './lifecycles.ts';
import { listLifecycles } from './lifecycles.ts';
import { permission, type Permission } from './dashboard.ts';
import { waitReason } from './dashboard-cells.ts';
import type { DomainDeps } from './deps.ts';
import { waitsOf, type Waiting } from './deployments.ts';
import { HEARTBEAT_WINDOW_MS, withStatus, type MachineView } from './machines.ts';
import { viewableProjectIds, visibleProject } from './projects.ts';
import { visibleWorkspace } from './scope.ts';
import { readableDeployment } from './deployment-events.ts';
import { toVariableView, type VariableView } from './variables.ts';

export interface DeploymentTarget extends DeploymentTask {
  /** Within a rolling group: the window (1, 2, …) the machine ran in, by start order; else null. */
  window: number | null;
}

export interface DeploymentPageView {
  deployment: Deployment;
  projectName: string;
  version: string;
  waitReason: string | null;
  steps: Array<{
    stepId: string;
    name: string;
    rollingGroup: { name: string; windowSize: number } | null;
    targets: DeploymentTarget[];
  }>;
  cancel: Permission;
  /** Issue #15: why a Queued or AwaitingSlot deployment waits, and its place in the slot queue. */
  waiting: Waiting;
  /** Issue #15: the approvals it needs (null when none), and whether this account may give one now. */
  approval: { requiredApprovals: number; approvedBy: string[]; awaiting: boolean; decide: Permission } | null;
}

/** Machines of a rolling group ordered by when they first started (unstarted last, by name), cut into windows. */
function windowsOf(tasks: readonly DeploymentTask[], windowSize: number): Map<string, number> {
  const firstStart = new Map<string, { at: number; name: string }>();
  for (const task of tasks) {
    const key = task.machineId ?? '';
    const at = task.startedUtc?.getTime() ?? Number.MAX_SAFE_INTEGER;
    const known = firstStart.get(key);
    if (!known || at < known.at) firstStart.set(key, { at, name: (task.machineName ?? '').toLowerCase() });
  }
  const ordered = [...firstStart.entries()].sort(([, a], [, b]) => a.at - b.at || a.name.localeCompare(b.name));
  return new Map(ordered.map(([machineId], i) => [machineId, Math.floor(i / Math.max(1, windowSize)) + 1]));
}

export async function getDeploymentPage(
  deps: DomainDeps,
  principal: Principal,
  deploymentId: string,
): Promise<DeploymentPageView> {
  const deployment = await readableDeployment(deps, principal, deploymentId, Capability.View);
  const target = { projectId: deployment.projectId, environmentIds: [deployment.environmentId] };
  const [release, project, tasks, running, organization, waits, decisions] = await Promise.all([
    deps.store.releases.get(deployment.releaseId),
    deps.store.projects.get(deployment.projectId),
    deps.store.deploymentTasks.listForDeployment(deployment.id),
    deployment.status === 'AwaitingSlot'
      ? deps.store.dashboardReads.runningIn([
          { projectId: deployment.projectId, environmentId: deployment.environmentId },
        ])
      : [],
    deployment.status === 'AwaitingSlot'
      ? deps.store.dashboardReads.organizationLoad(deployment.workspaceId)
      : { running: 0, maxConcurrent: 0 },
    waitsOf(deps, [deployment]),
    deployment.requiredApprovals > 0 ? deps.store.deploymentApprovals.listFor([deployment.id]) : [],
  ]);
  if (!release || !project) throw unknownId('deploymentId');
  const groups = new Map(release.snapshot.rollingGroups.map((g) => [g.rollingGroupId, g]));
  const windows = new Map(
    [...groups.values()].map((g) => [
      g.rollingGroupId,
      windowsOf(
        tasks.filter((t) => g.memberStepIds.includes(t.stepId)),
        g.windowSize,
      ),
    ]),
  );
  const steps = [...release.snapshot.steps]
    .sort((a, b) => a.sortOrder - b.sortOrder)
    .map((s) => {
      const group = s.rollingGroupId ? groups.get(s.rollingGroupId) : undefined;
      return {
        stepId: s.stepId,
        name: s.name,
        rollingGroup: group ? { name: group.name, windowSize: group.windowSize } : null,
        targets: tasks
          .filter((t) => t.stepId === s.stepId)
          .map((t) => ({
            ...t,
            window: group ? (windows.get(group.rollingGroupId)?.get(t.machineId ?? '') ?? null) : null,
          })),
      };
    });
  return {
    deployment,
    projectName: project.name,
    version: release.version,
    waitReason: waitReason(deployment, {
      now: deps.clock.now(),
      runningInCell: running[0] ?? null,
      organization,
      environmentName: deployment.environmentName,
    }),
    steps,
    cancel: permission(principal, Capability.Deploy, target),
    waiting: waits.get(deployment.id) ?? { waitingReason: null, queuePosition: null },
    approval: approvalOf(principal, deployment, decisions, target),
  };
}

/** The same rules as POST /api/deployment/approve, as the reason a button is disabled. */
function approvalOf(
  principal: Principal,
  deployment: Deployment,
  decisions: readonly DeploymentApproval[],
  target: { projectId: string; environmentIds: string[] },
): DeploymentPageView['approval'] {
  if (deployment.requiredApprovals === 0) return null;
  const approvedBy = decisions.filter((a) => a.decision === 'Approved').map((a) => a.accountName);
  const awaiting =
    deployment.status === 'Queued' &&
    !deployment.cancellationRequestedUtc &&
    approvedBy.length < deployment.requiredApprovals;
  const allowed = permission(principal, Capability.ApproveDeployments, target);
  const refusal = !awaiting
    ? 'The deployment no longer awaits approval'
    : !allowed.allowed
      ? allowed.reason
      : deployment.requestedBy?.id === principal.serviceAccountId
        ? 'You requested this deployment: another account must approve it'
        : decisions.some((a) => a.accountId === principal.serviceAccountId)
          ? 'You have already approved or rejected it'
          : null;
  return {
    requiredApprovals: deployment.requiredApprovals,
    approvedBy,
    awaiting,
    decide: refusal === null ? { allowed: true, reason: null } : { allowed: false, reason: refusal },
  };
}

export interface MachinesPageView extends Paged<MachineView & { tags: Tag[] }> {
  environments: Environment[];
  addMachine: Permission;
}

export async function getMachinesPage(
  deps: DomainDeps,
  principal: Principal,
  query: {
    workspaceId: string;
    search?: string | undefined;
    status?: 'Pending' | 'Online' | 'Offline' | undefined;
  } & PageRequest,
): Promise<MachinesPageView> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const now = deps.clock.now();
  const [page, environments, tags] = await Promise.all([
    deps.store.machines.list(workspace.id, toPage(query), {
      search: query.search,
      status: query.status,
      onlineSince: new Date(now.getTime() - HEARTBEAT_WINDOW_MS),
    }),
    deps.store.environments.listAll(workspace.id),
    deps.store.tags.list(workspace.id, { skip: 0, take: 500 }),
  ]);
  const tagById = new Map(tags.items.map((t) => [t.id, t]));
  return {
    items: page.items.map((m) => ({
      ...withStatus(deps, m),
      tags: m.tagIds.flatMap((id) => tagById.get(id) ?? []),
    })),
    totalCount: page.totalCount,
    environments,
    addMachine: permission(principal, Capability.ManageWorkspace),
  };
}

export interface TopologyView {
  workspace: Workspace;
  environments: Environment[];
  lifecycles: LifecycleReadModel[];
  projects: Project[];
  project: {
    project: Project;
    steps: Awaited<ReturnType<DomainDeps['store']['projectSteps']['listByProject']>>;
    rollingGroups: Awaited<ReturnType<DomainDeps['store']['rollingGroups']['listByProject']>>;
    variables: VariableView[];
  } | null;
}

/** Read-only topology: environments, lifecycles, and one project's steps, rolling groups and variables. */
export async function getTopology(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string; projectId?: string | undefined },
): Promise<TopologyView> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const [environments, lifecycles, projects] = await Promise.all([
    deps.store.environments.listAll(workspace.id),
    listLifecycles(deps, principal, { workspaceId: workspace.id, take: 500 }),
    deps.store.projects.list([workspace.id], { skip: 0, take: 500 }, viewableProjectIds(principal)),
  ]);
  let project: TopologyView['project'] = null;
  if (query.projectId) {
    const chosen = await visibleProject(deps, principal, query.projectId);
    if (chosen.workspaceId !== workspace.id) throw unknownId('projectId');
    authorize(principal, Capability.View, { projectId: chosen.id });
    const [steps, rollingGroups, variables] = await Promise.all([
      deps.store.projectSteps.listByProject(chosen.id),
      deps.store.rollingGroups.listByProject(chosen.id),
      deps.store.variables.listForProject(chosen.id),
    ]);
    project = { project: chosen, steps, rollingGroups, variables: variables.map(toVariableView) };
  }
  return { workspace, environments, lifecycles: lifecycles.items, projects: projects.items, project };
}
