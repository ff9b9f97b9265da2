/**
 * Workspace scoping: an account never sees or changes anything outside its workspace (or, for
 * organization-wide accounts, its organization). Anything outside is "unknown" (400), exactly as
 * if it did not exist, so that IDs of other tenants cannot even be probed.
 */
import { InvalidParameterError, unknownId, type Principal } from '../core/index.ts';
import { isUniqueViolation } from '../store/index.ts';
import type { Workspace } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';

export function canSeeWorkspace(principal: Principal, workspace: Pick<Workspace, 'id' | 'organizationId'>): boolean {
  if (workspace.organizationId !== principal.organizationId) return false;
  return principal.workspaceId === null || principal.workspaceId === workspace.id;
}

/**
 * Resolves a workspace the principal may see, or throws 400 naming `property` (the identifier
 * the caller sent, which may be the ID of a resource inside that workspace).
 */
export async function visibleWorkspace(
  deps: DomainDeps,
  principal: Principal,
  workspaceId: string,
  property = 'workspaceId',
): Promise<Workspace> {
  const workspace = await deps.store.workspaces.get(workspaceId);
  if (!workspace || !canSeeWorkspace(principal, workspace)) throw unknownId(property);
  return workspace;
}

/**
 * Loads a workspace-owned resource by ID and checks it is visible; else 400 naming `property`.
 * `load` returns null for missing or deleted rows.
 */
export async function visibleResource<T extends { workspaceId: string }>(
  deps: DomainDeps,
  principal: Principal,
  load: Promise<T | null>,
  property: string,
): Promise<T> {
  const resource = await load;
  if (!resource) throw unknownId(property);
  await visibleWorkspace(deps, principal, resource.workspaceId, property);
  return resource;
}

/**
 * As visibleResource, for a resource its store read together with its live workspace's
 * organization (getWithOrganization): one read instead of the resource's and then its workspace's.
 */
export async function visibleWithOrganization<T extends { workspaceId: string }>(
  principal: Principal,
  /** The read, or what it found when the caller read it together with more (release-inputs.ts). */
  load: Promise<{ resource: T; organizationId: string } | null> | { resource: T; organizationId: string } | null,
  property: string,
): Promise<T> {
  const found = await load;
  if (!found || !canSeeWorkspace(principal, { id: found.resource.workspaceId, organizationId: found.organizationId }))
    throw unknownId(property);
  return found.resource;
}

/** Runs a write that a unique index guards, turning a duplicate name into a clear 400. */
export async function withUniqueName<T>(property: string, name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new InvalidParameterError(`A resource named '${name}' already exists here`, [
        { property, messages: [`'${name}' is already in use`] },
      ]);
    }
    throw error;
  }
}
