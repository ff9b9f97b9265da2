/**
 * The dashboard's page reads (issue #11): each page's first paint is one call, scoped and
 * authorized exactly as the API's own reads (workspace visibility, View, project-limited roles),
 * with what the account may do on the page said per action (allowed, or why not).
 */
import { authorize, can, Capability, toPage, type PageRequest, type Principal } from '../core/index.ts';
import type { CellDeployment, DashboardRelease, Environment, Project, Workspace } from '../store/index.ts';
import { awaitingCells, waitReason } from './dashboard-cells.ts';
import type { DomainDeps } from './deps.ts';
import { computeProgression, type EnvironmentAvailability } from './lifecycle-progression.ts';
import { viewableProjectIds, visibleProject } from './projects.ts';
import { packageReferences, stepProperties, templateSnapshot } from './release-snapshot-builder.ts';
import { sortSemVerDescending } from '../core/index.ts';
import { visibleWorkspace } from './scope.ts';

/** Allowed, or the reason the account may not (shown beside the disabled control). */
export interface Permission {
  allowed: boolean;
  reason: string | null;
}

export function permission(principal: Principal, capability: Capability, target: Parameters<typeof can>[2] = {}) {
  return can(principal, capability, target)
    ? { allowed: true, reason: null }
    : { allowed: false, reason: `Your account lacks the ${capability} role here` };
}

export interface Cell {
  environmentId: string;
  deployment: (CellDeployment & { waitReason: string | null }) | null;
}

async function withWaitReasons(
  deps: DomainDeps,
  workspaceId: string,
  cells: CellDeployment[],
  projectIdOf: (cell: CellDeployment) => string,
  environments: readonly Environment[],
): Promise<Map<string, Cell['deployment']>> {
  const waiting = awaitingCells(cells, projectIdOf);
  const [running, organization] = await Promise.all([
    deps.store.dashboardReads.runningIn(waiting),
    waiting.length > 0 ? deps.store.dashboardReads.organizationLoad(workspaceId) : { running: 0, maxConcurrent: 0 },
  ]);
  const now = deps.clock.now();
  const names = new Map(environments.map((e) => [e.id, e.name]));
  return new Map(
    cells.map((cell) => {
      const runningInCell =
        running.find((r) => r.projectId === projectIdOf(cell) && r.environmentId === cell.environmentId) ?? null;
      const reason = waitReason(cell, {
        now,
        runningInCell,
        organization,
        environmentName: names.get(cell.environmentId) ?? '',
      });
      return [`${cell.rowId}/${cell.environmentId}`, { ...cell, waitReason: reason }];
    }),
  );
}

export interface OverviewView {
  workspace: Workspace;
  workspaces: Workspace[];
  environments: Environment[];
  projects: Array<{ project: Project; cells: Cell[] }>;
  totalCount: number;
}

export async function getOverview(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string; search?: string | undefined } & PageRequest,
): Promise<OverviewView> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const [workspaces, environments, page] = await Promise.all([
    deps.store.workspaces.list(principal.organizationId, principal.workspaceId),
    deps.store.environments.listAll(workspace.id),
    deps.store.projects.list([workspace.id], toPage(query), viewableProjectIds(principal), query.search),
  ]);
  const cells = await deps.store.dashboardReads.latestByProject(
    page.items.map((p) => p.id),
    environments.map((e) => e.id),
  );
  const byCell = await withWaitReasons(deps, workspace.id, cells, (c) => c.rowId, environments);
  return {
    workspace,
    workspaces,
    environments,
    projects: page.items.map((project) => ({
      project,
      cells: environments.map((e) => ({
        environmentId: e.id,
        deployment: byCell.get(`${project.id}/${e.id}`) ?? null,
      })),
    })),
    totalCount: page.totalCount,
  };
}

export interface ProjectPageView {
  project: Project;
  lifecycleName: string | null;
  environments: Environment[];
  channels: Array<{ channelId: string; name: string; isDefault: boolean }>;
  releases: Array<{
    release: DashboardRelease;
    environments: Array<Cell & Pick<EnvironmentAvailability, 'available' | 'reason'> & { deploy: Permission }>;
  }>;
  totalCount: number;
  createRelease: Permission;
}

export async function getProjectPage(
  deps: DomainDeps,
  principal: Principal,
  query: { projectId: string; search?: string | undefined } & PageRequest,
): Promise<ProjectPageView> {
  const project = await visibleProject(deps, principal, query.projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  const [environments, channels, lifecycle, page] = await Promise.all([
    deps.store.environments.listAll(project.workspaceId),
    deps.store.channels.listByProject(project.id),
    project.lifecycleId ? deps.store.lifecycles.get(project.lifecycleId) : null,
    deps.store.dashboardReads.releasesPage(project.id, toPage(query), query.search),
  ]);
  const releaseIds = page.items.map((r) => r.id);
  const [cells, progress] = await Promise.all([
    deps.store.dashboardReads.latestByRelease(
      releaseIds,
      environments.map((e) => e.id),
    ),
    deps.store.dashboardReads.progressOf(releaseIds),
  ]);
  const byCell = await withWaitReasons(deps, project.workspaceId, cells, () => project.id, environments);
  const progressionEnvironments = environments.map((e) => ({ environmentId: e.id, name: e.name, enabled: e.enabled }));
  return {
    project,
    lifecycleName: lifecycle?.name ?? null,
    environments,
    channels: channels.map((c) => ({ channelId: c.id, name: c.name, isDefault: c.isDefault })),
    releases: page.items.map((release) => {
      const progression = computeProgression(
        release.lifecycle,
        progressionEnvironments,
        progress.filter((p) => p.releaseId === release.id),
      );
      return {
        release,
        environments: environments.map((e) => {
          const availability = progression.environments.find((a) => a.environmentId === e.id);
          return {
            environmentId: e.id,
            deployment: byCell.get(`${release.id}/${e.id}`) ?? null,
            available: availability?.available ?? false,
            reason: availability?.reason ?? null,
            deploy: permission(principal, Capability.Deploy, { projectId: project.id, environmentIds: [e.id] }),
          };
        }),
      };
    }),
    totalCount: page.totalCount,
    createRelease: permission(principal, Capability.CreateRelease, { projectId: project.id }),
  };
}

export interface ReleaseFormView {
  project: Project;
  /** The newest release's version with its patch number raised, or 1.0.0. */
  nextVersion: string;
  channels: Array<{ channelId: string; name: string; isDefault: boolean }>;
  /** Each package the project's steps use, its versions in the feed highest first (at most 20). */
  packages: Array<{ packageId: string; versions: string[] }>;
  createRelease: Permission;
}

function nextPatch(version: string | null): string {
  const match = version ? /^(\d+)\.(\d+)\.(\d+)/.exec(version) : null;
  return match ? `${match[1]}.${match[2]}.${Number(match[3]) + 1}` : '1.0.0';
}

/** What the "create release" form offers: channels, the packages with their feed versions, a version. */
export async function getReleaseForm(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<ReleaseFormView> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  const [steps, channels, highest] = await Promise.all([
    deps.store.projectSteps.listByProject(project.id),
    deps.store.channels.listByProject(project.id),
    deps.store.releases.highest(project.id),
  ]);
  const packageIds = new Map<string, string>();
  for (const templateId of new Set(steps.map((s) => s.stepTemplateId))) {
    const template = await deps.store.stepTemplates.get(templateId);
    if (!template) continue;
    const snapshot = templateSnapshot(template);
    for (const step of steps.filter((s) => s.stepTemplateId === templateId))
      for (const id of packageReferences(snapshot, stepProperties(snapshot, step.propertiesJson)))
        if (!packageIds.has(id.toLowerCase())) packageIds.set(id.toLowerCase(), id);
  }
  const packages = await Promise.all(
    [...packageIds.values()].map(async (packageId) => ({
      packageId,
      versions: sortSemVerDescending(
        (await deps.store.packages.list(project.workspaceId, packageId)).map((p) => p.version),
      ).slice(0, 20),
    })),
  );
  return {
    project,
    nextVersion: nextPatch(highest?.version ?? null),
    channels: channels.map((c) => ({ channelId: c.id, name: c.name, isDefault: c.isDefault })),
    packages,
    createRelease: permission(principal, Capability.CreateRelease, { projectId: project.id }),
  };
}

export type WorkspaceChange = { type: 'changed'; lastChangeTick: bigint } | { type: 'keepalive' };

/**
 * The overview's live feed: the workspace's deployment change tick (bumped by every change of any
 * of its deployments) each time it moves, checked every `pollMs` on an index (no row is read).
 * The first event is the current tick; a client re-reads its page when a later one arrives.
 */
export async function followWorkspace(
  deps: DomainDeps,
  principal: Principal,
  workspaceId: string,
  signal: AbortSignal,
  options: { pollMs?: number; keepaliveMs?: number } = {},
): Promise<AsyncGenerator<WorkspaceChange>> {
  const workspace = await visibleWorkspace(deps, principal, workspaceId);
  authorize(principal, Capability.View);
  const pollMs = options.pollMs ?? 1_000;
  const keepaliveMs = options.keepaliveMs ?? 15_000;
  return (async function* () {
    let shown: bigint | null = null;
    let lastOutput = performance.now();
    while (!signal.aborted) {
      const tick = await deps.store.deployments.maxChangeTick({ workspaceId: workspace.id });
      if (tick !== shown) {
        shown = tick;
        lastOutput = performance.now();
        yield { type: 'changed', lastChangeTick: tick };
      } else if (performance.now() - lastOutput >= keepaliveMs) {
        lastOutput = performance.now();
        yield { type: 'keepalive' };
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, pollMs);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done);
      });
    }
  })();
}
