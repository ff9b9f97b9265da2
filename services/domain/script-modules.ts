/**
 * Script modules (contract §3): shared script code of a workspace that projects import; at
 * deployment, imported modules of a step's language are loaded before its script.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  toPage,
  unknownId,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import { isForeignKeyViolation } from '../store/index.ts';
import type { ScriptModule } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';
import type { ScriptLanguage } from './step-templates.ts';

export interface ScriptModuleInput {
  name: string;
  description?: string | null | undefined;
  script: string;
  scriptLanguage: ScriptLanguage;
}

async function visibleScriptModule(
  deps: DomainDeps,
  principal: Principal,
  scriptModuleId: string,
): Promise<ScriptModule> {
  return visibleResource(deps, principal, deps.store.scriptModules.get(scriptModuleId), 'scriptModuleId');
}

export async function listScriptModules(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<ScriptModule>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  return deps.store.scriptModules.list(workspace.id, toPage(query));
}

export async function getScriptModule(
  deps: DomainDeps,
  principal: Principal,
  scriptModuleId: string,
): Promise<ScriptModule> {
  const module = await visibleScriptModule(deps, principal, scriptModuleId);
  authorize(principal, Capability.View);
  return module;
}

export async function createScriptModule(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string } & ScriptModuleInput,
): Promise<{ scriptModuleId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const module: ScriptModule = {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    description: input.description ?? null,
    script: input.script,
    scriptLanguage: input.scriptLanguage,
  };
  await withUniqueName('name', input.name, () => deps.store.scriptModules.insert(module));
  return { scriptModuleId: module.id };
}

export async function updateScriptModule(
  deps: DomainDeps,
  principal: Principal,
  input: { scriptModuleId: string } & Partial<ScriptModuleInput>,
): Promise<void> {
  const module = await visibleScriptModule(deps, principal, input.scriptModuleId);
  authorize(principal, Capability.ManageWorkspace);
  await withUniqueName('name', input.name ?? module.name, () =>
    deps.store.scriptModules.update(module.id, {
      name: input.name,
      description: input.description,
      script: input.script,
      scriptLanguage: input.scriptLanguage,
    }),
  );
}

/**
 * Refuses while a live project imports the module: silently dropping it would break that
 * project's next deployment. Imports by deleted projects do not count (they cascade away).
 */
export async function deleteScriptModule(
  deps: DomainDeps,
  principal: Principal,
  scriptModuleId: string,
): Promise<void> {
  const module = await visibleScriptModule(deps, principal, scriptModuleId);
  authorize(principal, Capability.ManageWorkspace);
  const projects = await deps.store.scriptModules.importedBy(module.id);
  if (projects.length > 0) {
    throw new InvalidParameterError(
      `Script module '${module.name}' is still imported by ${projects.map((p) => `project '${p}'`).join(', ')}`,
      [{ property: 'scriptModuleId', messages: ['in use'] }],
    );
  }
  await deps.store.scriptModules.delete(module.id);
}

// ---- Project imports ----------------------------------------------------------------------------

/** A module deleted between the check and the write is an unknown ID too, not a 500. */
async function withModulesPresent(property: string, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (isForeignKeyViolation(error)) throw unknownId(property);
    throw error;
  }
}

/** Checks every ID names a module of the workspace; returns them de-duplicated. */
async function requireModules(
  deps: DomainDeps,
  workspaceId: string,
  ids: readonly string[],
  property: string,
): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await deps.store.scriptModules.getMany(workspaceId, unique);
  if (found.length !== unique.length) throw unknownId(property);
  return unique;
}

export async function listProjectScriptModules(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<{ projectId: string; scriptModules: ScriptModule[] }> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  return { projectId: project.id, scriptModules: await deps.store.scriptModules.importsOf(project.id) };
}

export async function setProjectScriptModules(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; scriptModuleIds: string[] },
): Promise<void> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  const ids = await requireModules(deps, project.workspaceId, input.scriptModuleIds, 'scriptModuleIds');
  await withModulesPresent('scriptModuleIds', () =>
    deps.store.transaction((tx) => tx.scriptModules.setImports(project.id, ids)),
  );
}

export async function addProjectScriptModule(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; scriptModuleId: string },
): Promise<void> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  await requireModules(deps, project.workspaceId, [input.scriptModuleId], 'scriptModuleId');
  await withModulesPresent('scriptModuleId', () =>
    deps.store.scriptModules.addImport(project.id, input.scriptModuleId),
  );
}

export async function removeProjectScriptModule(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; scriptModuleId: string },
): Promise<void> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  if (!(await deps.store.scriptModules.removeImport(project.id, input.scriptModuleId))) {
    throw new InvalidParameterError(`Invalid scriptModuleId: not imported by project '${project.name}'`, [
      { property: 'scriptModuleId', messages: ['not imported by this project'] },
    ]);
  }
}
