/**
 * Use cases: business rules per resource. Every function takes (deps, principal, input), checks
 * scope and capability itself, and throws the core errors. Never sees request or reply.
 */
export type { DomainDeps } from './deps.ts';
export { authenticate } from './authentication.ts';
export { bootstrap } from './bootstrap.ts';
export type { BootstrapOptions, BootstrapResult } from './bootstrap.ts';
export { visibleWorkspace, visibleResource, withUniqueName } from './scope.ts';
export {
  listWorkspaces,
  createWorkspace,
  updateWorkspace,
  deleteWorkspace,
  getOrganizationSettings,
  updateOrganizationSettings,
} from './workspaces.ts';
export {
  getMe,
  createServiceAccount,
  listServiceAccounts,
  deleteServiceAccount,
  createApiKey,
  listApiKeys,
  deleteApiKey,
} from './service-accounts.ts';
export { listEnvironments, getEnvironment, createEnvironment, updateEnvironment, deleteEnvironment } from './environments.ts';
export { visibleProject, listProjects, getProject, createProject, updateProject, deleteProject } from './projects.ts';
