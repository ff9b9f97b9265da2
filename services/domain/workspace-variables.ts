/**
 * Workspace variables (spec §3, §4.12; contract §3): shared by the projects that import them;
 * variables and values are soft-deleted (a deleted variable also leaves every project's imports).
 * Imports need EditProject on the project and only take live variables of its workspace.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  toPage,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type { VariableType } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { visibleWorkspace } from './scope.ts';
import {
  addValue,
  authorizeVariableWrite,
  changeValue,
  changeVariable,
  insertVariable,
  removeValue,
  removeVariable,
  toVariableView,
  visibleValue,
  visibleVariable,
  VariableKind,
  type FilterInput,
  type VariableInput,
  type VariableView,
} from './variables.ts';

export async function listWorkspaceVariables(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<{ workspaceId: string } & Paged<VariableView>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const page = await deps.store.variables.listForWorkspace(workspace.id, toPage(query));
  return { workspaceId: workspace.id, items: page.items.map(toVariableView), totalCount: page.totalCount };
}

export async function createWorkspaceVariable(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string } & VariableInput,
): Promise<{ variableId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  return insertVariable(deps, { workspaceId: workspace.id, projectId: null }, input);
}

export async function updateWorkspaceVariable(
  deps: DomainDeps,
  principal: Principal,
  input: { variableId: string } & Partial<VariableInput>,
): Promise<void> {
  const variable = await visibleVariable(deps, principal, input.variableId, VariableKind.Workspace);
  authorizeVariableWrite(principal, variable);
  await changeVariable(deps, variable, input);
}

export async function deleteWorkspaceVariable(
  deps: DomainDeps,
  principal: Principal,
  variableId: string,
): Promise<void> {
  await removeVariable(deps, principal, await visibleVariable(deps, principal, variableId, VariableKind.Workspace));
}

export async function createWorkspaceVariableValue(
  deps: DomainDeps,
  principal: Principal,
  input: { variableId: string; theValue: string } & FilterInput,
): Promise<{ variableValueId: string }> {
  return addValue(
    deps,
    principal,
    await visibleVariable(deps, principal, input.variableId, VariableKind.Workspace),
    input,
  );
}

export async function updateWorkspaceVariableValue(
  deps: DomainDeps,
  principal: Principal,
  input: { variableValueId: string; theValue?: string | undefined } & FilterInput,
): Promise<void> {
  await changeValue(
    deps,
    principal,
    await visibleValue(deps, principal, input.variableValueId, VariableKind.Workspace),
    input,
  );
}

export async function deleteWorkspaceVariableValue(
  deps: DomainDeps,
  principal: Principal,
  variableValueId: string,
): Promise<void> {
  await removeValue(deps, principal, await visibleValue(deps, principal, variableValueId, VariableKind.Workspace));
}

// ---- Imports into a project ----

export interface ImportedVariable {
  variableId: string;
  name: string;
  variableType: VariableType;
}

export async function listImportedWorkspaceVariables(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<{ projectId: string; workspaceVariables: ImportedVariable[] }> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  const imported = await deps.store.variables.imports(project.id);
  return {
    projectId: project.id,
    workspaceVariables: imported.map((v) => ({ variableId: v.id, name: v.name, variableType: v.variableType })),
  };
}

async function editableProject(deps: DomainDeps, principal: Principal, projectId: string) {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  return project;
}

/** Checks every ID names a live workspace variable of the project's workspace; else 400. */
async function requireWorkspaceVariables(
  deps: DomainDeps,
  workspaceId: string,
  ids: readonly string[],
  property: string,
): Promise<void> {
  const found = await deps.store.variables.workspaceVariables(workspaceId, ids);
  if (found.length !== ids.length) {
    const known = new Set(found.map((v) => v.id));
    const missing = ids.filter((id) => !known.has(id));
    throw new InvalidParameterError(
      `Invalid ${property}: not a workspace variable of this workspace: ${missing.join(', ')}`,
      [{ property, messages: ['not found'] }],
    );
  }
}

export async function setImportedWorkspaceVariables(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; variableIds: string[] },
): Promise<void> {
  const project = await editableProject(deps, principal, input.projectId);
  const ids = [...new Set(input.variableIds)];
  await requireWorkspaceVariables(deps, project.workspaceId, ids, 'variableIds');
  await deps.store.transaction((tx) => tx.variables.setImports(project.id, ids));
}

/** Imports one workspace variable; importing it again is harmless. */
export async function importWorkspaceVariable(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; variableId: string },
): Promise<void> {
  const project = await editableProject(deps, principal, input.projectId);
  await requireWorkspaceVariables(deps, project.workspaceId, [input.variableId], 'variableId');
  await deps.store.variables.addImport(project.id, input.variableId);
}

/** Removes one import; a variable that is not imported is a 400, so typos do not pass silently. */
export async function removeWorkspaceVariableImport(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; variableId: string },
): Promise<void> {
  const project = await editableProject(deps, principal, input.projectId);
  if (!(await deps.store.variables.removeImport(project.id, input.variableId))) {
    throw new InvalidParameterError('Invalid variableId: not imported into this project', [
      { property: 'variableId', messages: ['not imported'] },
    ]);
  }
}
