/** Projects (contract §3): what gets deployed; soft-deleted, after which the ID is unknown. */
import {
  authorize,
  Capability,
  newId,
  toPage,
  unknownId,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type { Project } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleWithOrganization, visibleWorkspace, withUniqueName } from './scope.ts';

/** Loads a project the principal may see (any capability check is the caller's), else 400. */
export async function visibleProject(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
  property = 'projectId',
): Promise<Project> {
  return visibleWithOrganization(principal, deps.store.projects.getWithOrganization(projectId), property);
}

async function checkLifecycle(
  deps: DomainDeps,
  workspaceId: string,
  lifecycleId: string | null | undefined,
): Promise<void> {
  if (lifecycleId === undefined || lifecycleId === null) return;
  const lifecycle = await deps.store.lifecycles.get(lifecycleId);
  if (!lifecycle || lifecycle.workspaceId !== workspaceId) throw unknownId('lifecycleId');
}

/** The project IDs an account is limited to, or null when some View role covers every project. */
export function viewableProjectIds(principal: Principal): string[] | null {
  const roles = principal.roles.filter((r) => r.role === Capability.View || r.role === Capability.Admin);
  if (roles.some((r) => !r.projectIds)) return null;
  return roles.flatMap((r) => r.projectIds ?? []);
}

/**
 * The projects of one workspace, or without `workspaceId` of every workspace the account sees:
 * a client that knows a project only by name (the CLI) finds it in one request.
 */
export async function listProjects(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId?: string | undefined } & PageRequest,
): Promise<Paged<Project>> {
  const workspaceIds =
    query.workspaceId === undefined
      ? (await deps.store.workspaces.list(principal.organizationId, principal.workspaceId)).map((w) => w.id)
      : [(await visibleWorkspace(deps, principal, query.workspaceId)).id];
  authorize(principal, Capability.View);
  return deps.store.projects.list(workspaceIds, toPage(query), viewableProjectIds(principal));
}

export async function getProject(deps: DomainDeps, principal: Principal, projectId: string): Promise<Project> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  return project;
}

export async function createProject(
  deps: DomainDeps,
  principal: Principal,
  input: {
    workspaceId: string;
    name: string;
    description?: string | null | undefined;
    lifecycleId?: string | null | undefined;
  },
): Promise<{ projectId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  // A role limited to some projects cannot create new ones: the new ID is in no list.
  if (
    !principal.roles.some((r) => (r.role === Capability.EditProject && !r.projectIds) || r.role === Capability.Admin)
  ) {
    authorize(principal, Capability.EditProject, { projectId: '(new project)' });
  }
  await checkLifecycle(deps, workspace.id, input.lifecycleId);
  const projectId = newId();
  await withUniqueName('name', input.name, () =>
    deps.store.projects.insert({
      id: projectId,
      workspaceId: workspace.id,
      name: input.name,
      description: input.description ?? null,
      lifecycleId: input.lifecycleId ?? null,
    }),
  );
  return { projectId };
}

export async function updateProject(
  deps: DomainDeps,
  principal: Principal,
  input: {
    projectId: string;
    name?: string | undefined;
    description?: string | null | undefined;
    lifecycleId?: string | null | undefined;
  },
): Promise<void> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  await checkLifecycle(deps, project.workspaceId, input.lifecycleId);
  await withUniqueName('name', input.name ?? project.name, () =>
    deps.store.projects.update(project.id, {
      name: input.name,
      description: input.description,
      lifecycleId: input.lifecycleId,
    }),
  );
}

export async function deleteProject(deps: DomainDeps, principal: Principal, projectId: string): Promise<void> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  const now = deps.clock.now();
  // A deleted project is treated as not existing (spec §2): its deployments in progress stop, as
  // if cancelled, rather than go on running its steps from a release nobody can see any more.
  const cancelled = await deps.store.transaction(async (tx) => {
    await tx.projects.softDelete(project.id, now);
    return tx.deployments.requestCancellationOfProject(project.id, now);
  });
  if (cancelled.length > 0) await deps.wakeDeployments?.(cancelled);
}
