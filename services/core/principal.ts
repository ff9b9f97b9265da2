import { InsufficientPermissionsError } from './errors.ts';

/**
 * Who is calling, and what they may do (contract §2). A role grants one capability, optionally
 * limited to some projects and/or environments. `Admin` grants everything.
 */
export const Capability = {
  Admin: 'Admin',
  ManageWorkspace: 'ManageWorkspace',
  EditProject: 'EditProject',
  CreateRelease: 'CreateRelease',
  Deploy: 'Deploy',
  PushPackages: 'PushPackages',
  View: 'View',
  /** Approve or reject deployments to environments that require approval (issue #15). */
  ApproveDeployments: 'ApproveDeployments',
  /** Deploy during a deployment freeze, giving a reason (issue #15). */
  OverrideFreeze: 'OverrideFreeze',
} as const;
export type Capability = (typeof Capability)[keyof typeof Capability];
export const CAPABILITIES = Object.values(Capability);

export interface Role {
  role: Capability;
  projectIds?: string[] | undefined;
  environmentIds?: string[] | undefined;
}

export interface Principal {
  serviceAccountId: string;
  name: string;
  organizationId: string;
  /** null: an organization-wide account (Admin accounts only). */
  workspaceId: string | null;
  roles: Role[];
}

/** What an action touches; the limits of a role are checked against it. */
export interface Target {
  projectId?: string | undefined;
  environmentIds?: readonly string[] | undefined;
}

function grants(role: Role, capability: Capability, target: Target): boolean {
  if (role.role === Capability.Admin) return true;
  if (role.role !== capability) return false;
  if (role.projectIds && target.projectId !== undefined && !role.projectIds.includes(target.projectId)) return false;
  if (role.environmentIds && target.environmentIds) {
    const allowed = role.environmentIds;
    if (!target.environmentIds.every((id) => allowed.includes(id))) return false;
  }
  return true;
}

/** True when some role of the principal grants one of the capabilities for the target. */
export function can(
  principal: Principal,
  capabilities: Capability | readonly Capability[],
  target: Target = {},
): boolean {
  const wanted = typeof capabilities === 'string' ? [capabilities] : capabilities;
  return principal.roles.some((role) => wanted.some((c) => grants(role, c, target)));
}

/**
 * The one authorization check. Throws 401/2003 naming the missing capability. With environment
 * targets, the message lists the refused environment IDs (spec §7.3, promote).
 */
export function authorize(
  principal: Principal,
  capabilities: Capability | readonly Capability[],
  target: Target = {},
): void {
  if (can(principal, capabilities, target)) return;
  const wanted = typeof capabilities === 'string' ? [capabilities] : [...capabilities];
  const named = wanted.join(' or ');
  const envs = target.environmentIds ?? [];
  if (envs.length > 0 && can(principal, capabilities, { projectId: target.projectId })) {
    const refused = envs.filter(
      (id) => !can(principal, capabilities, { projectId: target.projectId, environmentIds: [id] }),
    );
    throw new InsufficientPermissionsError(`Missing permission '${named}' for environments: ${refused.join(', ')}`);
  }
  const where = target.projectId ? ` on project ${target.projectId}` : '';
  throw new InsufficientPermissionsError(`Missing permission '${named}'${where}`);
}
