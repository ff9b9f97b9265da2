/**
 * Deployment reads and cancel (spec §4.4–4.5; contract §5): status with logs paged by .NET tick,
 * the list with change polling, the targets view, and cancellation from any non-final state.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  isFinalStatus,
  parseTicks,
  toPage,
  unknownId,
  type PageRequest,
  type Paged,
  type Principal,
  type DeploymentStatus,
} from '../core/index.ts';
import type { Deployment, DeploymentTask, LogEntry } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { highestEquivalentRelease } from './releases.ts';
import { CACHED_DEPLOYMENT_MAX_LINES, deploymentReadKey, type CachedDeploymentRead } from './read-caches.ts';
import { canSeeWorkspace, visibleResource, visibleWithOrganization, visibleWorkspace } from './scope.ts';

/** Reading a deployment is part of deploying it: CI accounts with Deploy may poll without View. */
const READ = [Capability.View, Capability.Deploy] as const;

/** At most this many log lines per read; clients page on with getLogsAfter. */
export const MAX_LOGS_PER_READ = 5_000;

async function visibleDeployment(deps: DomainDeps, principal: Principal, deploymentId: string): Promise<Deployment> {
  return visibleResource(deps, principal, deps.store.deployments.get(deploymentId), 'deploymentId');
}

export interface DeploymentView {
  deployment: Deployment;
  logs: LogEntry[] | null;
  waiting: Waiting;
}

/** Why a Queued or AwaitingSlot deployment waits, and its place in the slot queue (issue #15). */
export interface Waiting {
  waitingReason: string | null;
  queuePosition: number | null;
}

const NOT_WAITING: Waiting = { waitingReason: null, queuePosition: null };

/**
 * The waits of a page of deployments: from their own rows (gate, schedule) and, for those
 * awaiting a slot, two reads for the whole page (never one per deployment).
 */
export async function waitsOf(deps: DomainDeps, deployments: readonly Deployment[]): Promise<Map<string, Waiting>> {
  const now = deps.clock.now();
  const slots = await deps.store.deployments.slotWaits(deployments);
  const waits = new Map<string, Waiting>();
  for (const d of deployments) {
    if (d.cancellationRequestedUtc) {
      waits.set(d.id, NOT_WAITING);
    } else if (d.status === 'Queued') {
      const reasons: string[] = [];
      if (d.scheduledFor && d.scheduledFor > now) reasons.push(`scheduled for ${d.scheduledFor.toISOString()}`);
      if (d.gated) reasons.push(d.waitingReason ?? 'checking approvals and freezes');
      waits.set(d.id, {
        waitingReason: reasons.length > 0 ? reasons.join('; ') : 'queued: the engine starts it next',
        queuePosition: null,
      });
    } else if (d.status === 'AwaitingSlot') {
      const slot = slots.get(d.id);
      waits.set(d.id, {
        waitingReason: slot?.runningDeploymentId
          ? `waiting for deployment ${slot.runningDeploymentId} in the same project and environment`
          : "no free slot: the organization's maxConcurrentDeployments are running",
        queuePosition: slot?.position ?? null,
      });
    } else {
      waits.set(d.id, NOT_WAITING);
    }
  }
  return waits;
}

export async function getDeployment(
  deps: DomainDeps,
  principal: Principal,
  query: { deploymentId: string; skipLogs?: boolean | undefined; getLogsAfter?: string | undefined },
): Promise<DeploymentView> {
  const after = parseTicks(query.getLogsAfter, 'getLogsAfter');
  const skipLogs = query.skipLogs === true;
  const cache = deps.readCaches?.deployments;
  // A finished deployment no longer changes (read-caches.ts): its answer is kept a few seconds.
  // Whether the caller may see it is checked below on every request, cached or not.
  const found = cache
    ? await cache.getOrLoad(
        deploymentReadKey(query.deploymentId, after, skipLogs),
        deps.clock.now().getTime(),
        () => readDeployment(deps, query.deploymentId, after, skipLogs),
        ({ view }) => isFinalStatus(view.deployment.status) && (view.logs?.length ?? 0) <= CACHED_DEPLOYMENT_MAX_LINES,
      )
    : await readDeployment(deps, query.deploymentId, after, skipLogs);
  if (
    !found ||
    !canSeeWorkspace(principal, { id: found.view.deployment.workspaceId, organizationId: found.organizationId })
  )
    throw unknownId('deploymentId');
  const { deployment } = found.view;
  authorize(principal, READ, { projectId: deployment.projectId, environmentIds: [deployment.environmentId] });
  if (deployment.status !== 'Queued' && deployment.status !== 'AwaitingSlot') return found.view;
  const waiting = (await waitsOf(deps, [deployment])).get(deployment.id) ?? NOT_WAITING;
  return { ...found.view, waiting };
}

/** The deployment, its workspace's organization and the lines asked for, as stored now; null when gone. */
async function readDeployment(
  deps: DomainDeps,
  deploymentId: string,
  after: bigint | null,
  skipLogs: boolean,
): Promise<CachedDeploymentRead | null> {
  // What pipelines poll: one statement after authentication, which reads the deployment and its
  // lines as of one instant, so a client shown a status has every line up to it (the last one
  // commits with the final status) and none past its LastLogDateTick (the PowerShell SDK asks for
  // what follows that tick: a later line shown beside it would come twice).
  if (skipLogs) {
    const found = await deps.store.deployments.getWithOrganization(deploymentId);
    return (
      found && {
        view: { deployment: found.deployment, logs: null, waiting: NOT_WAITING },
        organizationId: found.organizationId,
      }
    );
  }
  const read = await deps.store.deploymentLogs.readWithDeployment(deploymentId, after, MAX_LOGS_PER_READ);
  return (
    read && {
      view: { deployment: read.deployment, logs: read.page.entries, waiting: NOT_WAITING },
      organizationId: read.organizationId,
    }
  );
}

export async function cancelDeployment(deps: DomainDeps, principal: Principal, deploymentId: string): Promise<void> {
  const deployment = await visibleDeployment(deps, principal, deploymentId);
  authorize(principal, Capability.Deploy, {
    projectId: deployment.projectId,
    environmentIds: [deployment.environmentId],
  });
  const requested = await deps.store.deployments.requestCancellation(deployment.id, deps.clock.now());
  if (!requested) {
    throw new InvalidParameterError(`The deployment is already ${deployment.status} and cannot be cancelled`, [
      { property: 'deploymentId', messages: ['deployment is finished'] },
    ]);
  }
  await deps.wakeDeployments?.([deployment.id]);
}

export interface DeploymentListQuery extends PageRequest {
  workspaceId?: string | undefined;
  projectId?: string | undefined;
  releaseId?: string | undefined;
  /** With projectId: a SemVer-equivalent release version (`6.1` finds `6.1.0`, spec §9). */
  version?: string | undefined;
  status?: DeploymentStatus | undefined;
  changedAfterTick?: string | undefined;
}

export async function listDeployments(
  deps: DomainDeps,
  principal: Principal,
  query: DeploymentListQuery,
): Promise<Paged<Deployment> & { lastChangeTick: bigint; versions: Map<string, string>; waits: Map<string, Waiting> }> {
  const changedAfterTick = parseTicks(query.changedAfterTick, 'changedAfterTick') ?? undefined;
  let workspaceId: string | undefined;
  let projectId: string | undefined;
  let releaseId: string | undefined;
  if (query.releaseId) {
    const release = await visibleWithOrganization(
      principal,
      deps.store.releases.getWithOrganization(query.releaseId),
      'releaseId',
    );
    releaseId = release.id;
    projectId = release.projectId;
  } else if (query.projectId) {
    const project = await visibleProject(deps, principal, query.projectId);
    projectId = project.id;
    if (query.version) {
      const found = await highestEquivalentRelease(deps, project.id, query.version);
      if (!found)
        throw new InvalidParameterError(`No release '${query.version}' in the project`, [
          { property: 'version', messages: ['no release found'] },
        ]);
      releaseId = found;
    }
  } else if (query.workspaceId) {
    workspaceId = (await visibleWorkspace(deps, principal, query.workspaceId)).id;
  } else {
    throw new InvalidParameterError('Give workspaceId, projectId or releaseId', [
      { property: 'workspaceId', messages: ['one of workspaceId, projectId, releaseId is required'] },
    ]);
  }
  authorize(principal, READ, projectId ? { projectId } : {});
  const filter = { workspaceId, projectId, releaseId };
  const page = await deps.store.deployments.list({ ...filter, status: query.status, changedAfterTick }, toPage(query));
  // Release versions by release ID, read once per release on the page.
  const versions = new Map<string, string>();
  for (const d of page.items) {
    if (!versions.has(d.releaseId))
      versions.set(d.releaseId, (await deps.store.releases.get(d.releaseId))?.version ?? '');
  }
  const [waits, lastChangeTick] = await Promise.all([
    waitsOf(deps, page.items),
    deps.store.deployments.maxChangeTick(filter),
  ]);
  return { ...page, versions, waits, lastChangeTick };
}

export interface TargetsView {
  deployment: Deployment;
  steps: Array<{ stepId: string; name: string; tasks: DeploymentTask[] }>;
}

export async function getDeploymentTargets(
  deps: DomainDeps,
  principal: Principal,
  deploymentId: string,
): Promise<TargetsView> {
  const deployment = await visibleDeployment(deps, principal, deploymentId);
  authorize(principal, READ, { projectId: deployment.projectId, environmentIds: [deployment.environmentId] });
  const release = await deps.store.releases.get(deployment.releaseId);
  if (!release) throw unknownId('deploymentId');
  const tasks = await deps.store.deploymentTasks.listForDeployment(deployment.id);
  const steps = [...release.snapshot.steps]
    .sort((a, b) => a.sortOrder - b.sortOrder)
    .map((s) => ({ stepId: s.stepId, name: s.name, tasks: tasks.filter((t) => t.stepId === s.stepId) }));
  return { deployment, steps };
}
