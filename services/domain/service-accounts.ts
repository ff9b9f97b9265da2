/**
 * Service accounts and API keys (contract §2). Keys are shown once and stored only as hashes.
 * Only Admins manage accounts, and a workspace Admin only inside its workspace.
 */
import {
  authorize,
  Capability,
  hashSecret,
  InsufficientPermissionsError,
  InvalidParameterError,
  newId,
  newSecret,
  unknownId,
  type Principal,
  type Role,
} from '../core/index.ts';
import type { ApiKey, ServiceAccount } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleWorkspace } from './scope.ts';

export interface Me {
  serviceAccountId: string;
  name: string;
  organizationId: string;
  organizationName: string;
  workspaceId: string | null;
  roles: Role[];
}

export async function getMe(deps: DomainDeps, principal: Principal): Promise<Me> {
  const organization = await deps.store.organizations.get(principal.organizationId);
  return {
    serviceAccountId: principal.serviceAccountId,
    name: principal.name,
    organizationId: principal.organizationId,
    organizationName: organization?.name ?? '',
    workspaceId: principal.workspaceId,
    roles: principal.roles,
  };
}

async function visibleAccount(
  deps: DomainDeps,
  principal: Principal,
  serviceAccountId: string,
): Promise<ServiceAccount> {
  const account = await deps.store.serviceAccounts.get(serviceAccountId);
  if (!account || account.organizationId !== principal.organizationId) throw unknownId('serviceAccountId');
  if (principal.workspaceId !== null && account.workspaceId !== principal.workspaceId)
    throw unknownId('serviceAccountId');
  return account;
}

/** Every project and environment a role names must exist in the account's workspace. */
async function checkRoles(deps: DomainDeps, workspaceId: string | null, roles: Role[]): Promise<void> {
  const errors: Array<{ property: string; messages: string[] }> = [];
  for (const [index, role] of roles.entries()) {
    if (workspaceId === null && (role.projectIds || role.environmentIds)) {
      errors.push({
        property: `roles[${index}]`,
        messages: ['organization-wide accounts cannot limit roles to projects or environments'],
      });
      continue;
    }
    for (const projectId of role.projectIds ?? []) {
      const project = await deps.store.projects.get(projectId);
      if (!project || project.workspaceId !== workspaceId)
        errors.push({ property: `roles[${index}].projectIds`, messages: [`unknown project ${projectId}`] });
    }
    if (role.environmentIds && workspaceId) {
      const found = await deps.store.environments.getMany(workspaceId, role.environmentIds);
      for (const id of role.environmentIds) {
        if (!found.some((e) => e.id === id))
          errors.push({ property: `roles[${index}].environmentIds`, messages: [`unknown environment ${id}`] });
      }
    }
  }
  if (errors.length > 0) throw new InvalidParameterError('Invalid roles', errors);
}

export async function createServiceAccount(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId?: string | null | undefined; name: string; roles: Role[] },
): Promise<{ serviceAccountId: string }> {
  authorize(principal, Capability.Admin);
  const workspaceId = input.workspaceId ?? null;
  if (workspaceId === null) {
    if (principal.workspaceId !== null) {
      throw new InsufficientPermissionsError(
        "Missing permission 'Admin' on the organization (needed for organization-wide accounts)",
      );
    }
    if (!input.roles.some((r) => r.role === Capability.Admin)) {
      throw new InvalidParameterError('An account without a workspaceId must be an Admin account', [
        { property: 'workspaceId', messages: ['required unless the account has the Admin role'] },
      ]);
    }
  } else {
    await visibleWorkspace(deps, principal, workspaceId);
  }
  await checkRoles(deps, workspaceId, input.roles);
  const serviceAccountId = newId();
  await deps.store.serviceAccounts.insert({
    id: serviceAccountId,
    organizationId: principal.organizationId,
    workspaceId,
    name: input.name,
    roles: input.roles,
  });
  return { serviceAccountId };
}

export async function listServiceAccounts(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId?: string | undefined },
): Promise<ServiceAccount[]> {
  authorize(principal, Capability.Admin);
  if (query.workspaceId) {
    const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
    return deps.store.serviceAccounts.list(principal.organizationId, workspace.id);
  }
  const all = await deps.store.serviceAccounts.list(principal.organizationId, principal.workspaceId);
  return principal.workspaceId === null ? all : all.filter((a) => a.workspaceId === principal.workspaceId);
}

export async function deleteServiceAccount(
  deps: DomainDeps,
  principal: Principal,
  serviceAccountId: string,
): Promise<void> {
  authorize(principal, Capability.Admin);
  const account = await visibleAccount(deps, principal, serviceAccountId);
  if (account.id === principal.serviceAccountId) {
    throw new InvalidParameterError('An account cannot delete itself', [
      { property: 'serviceAccountId', messages: ['is the calling account'] },
    ]);
  }
  await deps.store.serviceAccounts.softDelete(account.id, deps.clock.now());
  await deps.forgetCachedReads?.();
}

export async function createApiKey(
  deps: DomainDeps,
  principal: Principal,
  serviceAccountId: string,
): Promise<{ apiKeyId: string; apiKey: string }> {
  authorize(principal, Capability.Admin);
  const account = await visibleAccount(deps, principal, serviceAccountId);
  const apiKey = newSecret();
  const apiKeyId = newId();
  await deps.store.serviceAccounts.insertApiKey({
    id: apiKeyId,
    serviceAccountId: account.id,
    keyHash: hashSecret(apiKey),
  });
  return { apiKeyId, apiKey };
}

export async function listApiKeys(deps: DomainDeps, principal: Principal, serviceAccountId: string): Promise<ApiKey[]> {
  authorize(principal, Capability.Admin);
  const account = await visibleAccount(deps, principal, serviceAccountId);
  return deps.store.serviceAccounts.listApiKeys(account.id);
}

export async function deleteApiKey(deps: DomainDeps, principal: Principal, apiKeyId: string): Promise<void> {
  authorize(principal, Capability.Admin);
  const key = await deps.store.serviceAccounts.getApiKey(apiKeyId);
  if (!key) throw unknownId('apiKeyId');
  await visibleAccount(deps, principal, key.serviceAccountId).catch(() => {
    throw unknownId('apiKeyId');
  });
  await deps.store.serviceAccounts.deleteApiKey(key.id, deps.clock.now());
  await deps.forgetCachedReads?.();
}
