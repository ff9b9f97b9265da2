/** Environments (contract §3): deployment targets of a workspace; soft-deleted. */
import { authorize, Capability, newId, toPage, type PageRequest, type Paged, type Principal } from '../core/index.ts';
import type { Environment } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export interface EnvironmentInput {
  name: string;
  description?: string | null | undefined;
  sortOrder?: number | undefined;
  color?: string | null | undefined;
  enabled?: boolean | undefined;
  requiredApprovals?: number | undefined;
}

export async function listEnvironments(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<Environment>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  return deps.store.environments.list(workspace.id, toPage(query));
}

export async function getEnvironment(
  deps: DomainDeps,
  principal: Principal,
  environmentId: string,
): Promise<Environment> {
  const environment = await visibleResource(
    deps,
    principal,
    deps.store.environments.get(environmentId),
    'environmentId',
  );
  authorize(principal, Capability.View);
  return environment;
}

export async function createEnvironment(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string } & EnvironmentInput,
): Promise<{ environmentId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const environment: Environment = {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    description: input.description ?? null,
    sortOrder: input.sortOrder ?? (await deps.store.environments.maxSortOrder(workspace.id)) + 1,
    color: input.color ?? null,
    enabled: input.enabled ?? true,
    requiredApprovals: input.requiredApprovals ?? 0,
  };
  await withUniqueName('name', input.name, () => deps.store.environments.insert(environment));
  return { environmentId: environment.id };
}

export async function updateEnvironment(
  deps: DomainDeps,
  principal: Principal,
  input: { environmentId: string } & Partial<EnvironmentInput>,
): Promise<void> {
  const environment = await visibleResource(
    deps,
    principal,
    deps.store.environments.get(input.environmentId),
    'environmentId',
  );
  authorize(principal, Capability.ManageWorkspace, { environmentIds: [environment.id] });
  await withUniqueName('name', input.name ?? environment.name, () =>
    deps.store.environments.update(environment.id, {
      name: input.name,
      description: input.description,
      sortOrder: input.sortOrder,
      color: input.color,
      enabled: input.enabled,
      requiredApprovals: input.requiredApprovals,
    }),
  );
}

export async function deleteEnvironment(deps: DomainDeps, principal: Principal, environmentId: string): Promise<void> {
  const environment = await visibleResource(
    deps,
    principal,
    deps.store.environments.get(environmentId),
    'environmentId',
  );
  authorize(principal, Capability.ManageWorkspace, { environmentIds: [environment.id] });
  await deps.store.environments.softDelete(environment.id, deps.clock.now());
}
