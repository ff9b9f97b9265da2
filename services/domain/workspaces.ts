/** Workspaces (contract §2): tenants inside the organization. Creating and deleting needs an organization-wide Admin. */
import { authorize, Capability, InsufficientPermissionsError, newId, type Principal } from '../core/index.ts';
import type { Organization, Workspace } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleWorkspace, withUniqueName } from './scope.ts';

function requireOrganizationAdmin(principal: Principal, action: string): void {
  authorize(principal, Capability.Admin);
  if (principal.workspaceId !== null) {
    throw new InsufficientPermissionsError(`Missing permission 'Admin' on the organization (needed to ${action})`);
  }
}

export async function listWorkspaces(deps: DomainDeps, principal: Principal): Promise<Workspace[]> {
  authorize(principal, Capability.View);
  return deps.store.workspaces.list(principal.organizationId, principal.workspaceId);
}

export async function createWorkspace(
  deps: DomainDeps,
  principal: Principal,
  input: { name: string; packageStoreRegion?: string | null | undefined },
): Promise<{ workspaceId: string }> {
  requireOrganizationAdmin(principal, 'create workspaces');
  const workspace: Workspace = {
    id: newId(),
    organizationId: principal.organizationId,
    name: input.name,
    packageStoreRegion: input.packageStoreRegion ?? null,
  };
  await withUniqueName('name', input.name, () => deps.store.workspaces.insert(workspace));
  return { workspaceId: workspace.id };
}

export async function updateWorkspace(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string; name?: string | undefined; packageStoreRegion?: string | null | undefined },
): Promise<void> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.Admin);
  await withUniqueName('name', input.name ?? workspace.name, () =>
    deps.store.workspaces.update(workspace.id, { name: input.name, packageStoreRegion: input.packageStoreRegion }),
  );
}

export async function deleteWorkspace(deps: DomainDeps, principal: Principal, workspaceId: string): Promise<void> {
  const workspace = await visibleWorkspace(deps, principal, workspaceId);
  requireOrganizationAdmin(principal, 'delete workspaces');
  await deps.store.workspaces.softDelete(workspace.id, deps.clock.now());
  // Its accounts' keys and its deployments must stop answering here at once.
  await deps.forgetCachedReads?.();
}

export async function getOrganizationSettings(deps: DomainDeps, principal: Principal): Promise<Organization> {
  authorize(principal, Capability.Admin);
  const organization = await deps.store.organizations.get(principal.organizationId);
  if (!organization) throw new Error(`Organization ${principal.organizationId} of an authenticated account is missing`);
  return organization;
}

export async function updateOrganizationSettings(
  deps: DomainDeps,
  principal: Principal,
  input: {
    maxParallelMachines?: number | undefined;
    maxConcurrentDeployments?: number | undefined;
    maxQueuedDeployments?: number | undefined;
  },
): Promise<void> {
  requireOrganizationAdmin(principal, 'change organization settings');
  await deps.store.organizations.updateSettings(principal.organizationId, input);
}
