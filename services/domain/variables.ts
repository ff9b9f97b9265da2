/**
 * Project variables and the rules every variable shares (contract §3): scoped values, filter
 * validation, Sensitive encryption. Workspace variables and imports: workspace-variables.ts.
 *
 * Decisions:
 * - Sensitive values are encrypted with deps.secrets and never returned (theValue: null).
 * - Changing Text → Sensitive encrypts the existing values; Sensitive → Text is refused while the
 *   variable has values (400), since it would either reveal them or need the user to retype them.
 * - A filter sent as null or [] clears that dimension; IDs are deduplicated.
 * - Deleting a project variable soft-deletes it and its values, like workspace variables.
 * - Writing a value checks the caller's environment limits against the value's environments
 *   filter (old and new), so an account limited to Dev cannot change what Production resolves.
 */
import { authorize, Capability, InvalidParameterError, newId, unknownId, type Principal } from '../core/index.ts';
import {
  VariableType,
  type Variable,
  type VariableValue,
  type VariableValueFilters,
  type VariableWithValues,
} from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { visibleWorkspace, withUniqueName } from './scope.ts';
import { requireTags } from './tags.ts';
import type { CandidateValue } from './variable-resolution.ts';

export const VariableKind = { Project: 'Project', Workspace: 'Workspace' } as const;
export type VariableKind = (typeof VariableKind)[keyof typeof VariableKind];

/** Filters as the API names them; undefined = not sent (PUT leaves it), null = clear. */
export interface FilterInput {
  environmentsFilter?: string[] | null | undefined;
  machineFilter?: string[] | null | undefined;
  tagFilter?: Array<{ tagIds: string[] }> | null | undefined;
  stepFilter?: string[] | null | undefined;
  channelFilter?: string[] | null | undefined;
}

export interface VariableValueView {
  variableValueId: string;
  theValue: string | null;
  environmentsFilter: string[];
  machineFilter: string[];
  tagFilter: Array<{ tagIds: string[] }>;
  stepFilter: string[];
  channelFilter: string[];
}

export interface VariableView {
  variableId: string;
  name: string;
  description: string | null;
  variableType: VariableType;
  values: VariableValueView[];
}

export function toVariableView(variable: VariableWithValues): VariableView {
  return {
    variableId: variable.id,
    name: variable.name,
    description: variable.description,
    variableType: variable.variableType,
    values: variable.values.map((v) => ({
      variableValueId: v.id,
      // Sensitive values never leave the server, whatever the column holds.
      theValue: variable.variableType === VariableType.Sensitive ? null : (v.plain ?? null),
      environmentsFilter: v.filters.environmentIds,
      machineFilter: v.filters.machineIds,
      tagFilter: v.filters.tagFilter,
      stepFilter: v.filters.stepIds,
      channelFilter: v.filters.channelIds,
    })),
  };
}

const unique = (ids: readonly string[]) => [...new Set(ids)];

/** Loads a live variable of the given kind that the principal may see; else 400 naming `property`. */
export async function visibleVariable(
  deps: DomainDeps,
  principal: Principal,
  variableId: string,
  kind: VariableKind,
  property = 'variableId',
): Promise<Variable> {
  const variable = await deps.store.variables.get(variableId);
  if (!variable || (variable.projectId !== null) !== (kind === VariableKind.Project)) throw unknownId(property);
  if (variable.projectId !== null) await visibleProject(deps, principal, variable.projectId, property);
  else await visibleWorkspace(deps, principal, variable.workspaceId, property);
  return variable;
}

/** Loads a live value of a live variable of the given kind; else 400 on variableValueId. */
export async function visibleValue(
  deps: DomainDeps,
  principal: Principal,
  variableValueId: string,
  kind: VariableKind,
): Promise<{ value: VariableValue; variable: Variable }> {
  const found = await deps.store.variables.getValue(variableValueId);
  if (!found) throw unknownId('variableValueId');
  await visibleVariable(deps, principal, found.variable.id, kind, 'variableValueId');
  return found;
}

/** The write capability for a variable of this owner, checked against the environments touched. */
export function authorizeVariableWrite(
  principal: Principal,
  owner: { projectId: string | null },
  environmentIds: readonly string[] = [],
): void {
  const environments = unique(environmentIds);
  if (owner.projectId !== null)
    authorize(principal, Capability.EditProject, { projectId: owner.projectId, environmentIds: environments });
  else authorize(principal, Capability.ManageWorkspace, { environmentIds: environments });
}

async function requireCount(count: Promise<number>, expected: number, property: string): Promise<void> {
  if ((await count) !== expected) throw unknownId(property);
}

/**
 * Turns the sent filters into stored ones, checking every ID belongs to the variable's workspace
 * (environments, machines, tags) or project (steps, channels). Workspace variables cannot be
 * scoped to steps or channels: those belong to one project, and a workspace variable is shared.
 */
export async function validateFilters(
  deps: DomainDeps,
  owner: Variable,
  input: FilterInput,
): Promise<Partial<VariableValueFilters>> {
  const filters: Partial<VariableValueFilters> = {};
  const store = deps.store.variables;
  if (input.environmentsFilter !== undefined) {
    const ids = unique(input.environmentsFilter ?? []);
    await requireCount(store.countEnvironments(owner.workspaceId, ids), ids.length, 'environmentsFilter');
    filters.environmentIds = ids;
  }
  if (input.machineFilter !== undefined) {
    const ids = unique(input.machineFilter ?? []);
    await requireCount(store.countMachines(owner.workspaceId, ids), ids.length, 'machineFilter');
    filters.machineIds = ids;
  }
  if (input.tagFilter !== undefined) {
    const sets = (input.tagFilter ?? []).map((set) => ({ tagIds: unique(set.tagIds) }));
    await requireTags(
      deps,
      owner.workspaceId,
      sets.flatMap((s) => s.tagIds),
      'tagFilter',
    );
    filters.tagFilter = sets;
  }
  for (const [key, property] of [
    ['stepFilter', 'stepIds'],
    ['channelFilter', 'channelIds'],
  ] as const) {
    const sent = input[key];
    if (sent === undefined) continue;
    const ids = unique(sent ?? []);
    if (ids.length > 0 && owner.projectId === null) {
      throw new InvalidParameterError(
        `Workspace variable values cannot have a ${key}: steps and channels belong to one project`,
        [{ property: key, messages: ['not allowed on workspace variables'] }],
      );
    }
    if (owner.projectId !== null) {
      const count =
        key === 'stepFilter' ? store.countSteps(owner.projectId, ids) : store.countChannels(owner.projectId, ids);
      await requireCount(count, ids.length, key);
    }
    filters[property] = ids;
  }
  return filters;
}

/** The stored form of a value: encrypted for Sensitive variables, plain otherwise. */
export function sealValue(
  deps: DomainDeps,
  type: VariableType,
  theValue: string,
): { plain: string | null; encrypted: string | null } {
  return type === VariableType.Sensitive
    ? { plain: null, encrypted: deps.secrets.encrypt(theValue) }
    : { plain: theValue, encrypted: null };
}

export interface VariableInput {
  name: string;
  description?: string | null | undefined;
  variableType: VariableType;
}

/** Creates a variable owned by a project (projectId set) or a workspace (projectId null). */
export async function insertVariable(
  deps: DomainDeps,
  owner: { workspaceId: string; projectId: string | null },
  input: VariableInput,
): Promise<{ variableId: string }> {
  const variable: Variable = {
    id: newId(),
    workspaceId: owner.workspaceId,
    projectId: owner.projectId,
    name: input.name,
    description: input.description ?? null,
    variableType: input.variableType,
  };
  await withUniqueName('name', input.name, () => deps.store.variables.insert(variable, deps.clock.now()));
  return { variableId: variable.id };
}

/** Applies a metadata change; see the header for the type-change rule. */
export async function changeVariable(
  deps: DomainDeps,
  variable: Variable,
  input: {
    name?: string | undefined;
    description?: string | null | undefined;
    variableType?: VariableType | undefined;
  },
): Promise<void> {
  const newType = input.variableType;
  await deps.store.transaction(async (tx) => {
    if (newType !== undefined && newType !== variable.variableType) {
      const values = await tx.variables.values(variable.id);
      if (newType === VariableType.Text && values.length > 0) {
        throw new InvalidParameterError(
          `Variable '${variable.name}' is Sensitive and has values; delete its values before making it Text`,
          [{ property: 'variableType', messages: ['cannot reveal Sensitive values'] }],
        );
      }
      for (const value of values) {
        if (value.plain !== null)
          await tx.variables.updateValue(value.id, { stored: sealValue(deps, VariableType.Sensitive, value.plain) });
      }
    }
    await withUniqueName('name', input.name ?? variable.name, () =>
      tx.variables.update(variable.id, { name: input.name, description: input.description, variableType: newType }),
    );
  });
}

/** Soft-deletes a variable after checking the caller may touch every environment its values reach. */
export async function removeVariable(deps: DomainDeps, principal: Principal, variable: Variable): Promise<void> {
  const values = await deps.store.variables.values(variable.id);
  authorizeVariableWrite(
    principal,
    variable,
    values.flatMap((v) => v.filters.environmentIds),
  );
  await deps.store.transaction((tx) => tx.variables.softDelete(variable.id, deps.clock.now()));
}

export async function addValue(
  deps: DomainDeps,
  principal: Principal,
  variable: Variable,
  input: { theValue: string } & FilterInput,
): Promise<{ variableValueId: string }> {
  authorizeVariableWrite(principal, variable, input.environmentsFilter ?? []);
  const filters = await validateFilters(deps, variable, input);
  const value: VariableValue = {
    id: newId(),
    variableId: variable.id,
    ...sealValue(deps, variable.variableType, input.theValue),
    filters: { environmentIds: [], machineIds: [], tagFilter: [], stepIds: [], channelIds: [], ...filters },
  };
  await deps.store.variables.insertValue(value, deps.clock.now());
  return { variableValueId: value.id };
}

export async function changeValue(
  deps: DomainDeps,
  principal: Principal,
  found: { value: VariableValue; variable: Variable },
  input: { theValue?: string | undefined } & FilterInput,
): Promise<void> {
  const { value, variable } = found;
  authorizeVariableWrite(principal, variable, [...value.filters.environmentIds, ...(input.environmentsFilter ?? [])]);
  const filters = await validateFilters(deps, variable, input);
  const stored = input.theValue === undefined ? undefined : sealValue(deps, variable.variableType, input.theValue);
  await deps.store.variables.updateValue(value.id, { stored, filters });
}

export async function removeValue(
  deps: DomainDeps,
  principal: Principal,
  found: { value: VariableValue; variable: Variable },
): Promise<void> {
  authorizeVariableWrite(principal, found.variable, found.value.filters.environmentIds);
  await deps.store.variables.softDeleteValue(found.value.id, deps.clock.now());
}

// ---- Project variables (EditProject on the project; View to read) ----

export async function listProjectVariables(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<{ projectId: string; variables: VariableView[] }> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  const variables = await deps.store.variables.listForProject(project.id);
  return { projectId: project.id, variables: variables.map(toVariableView) };
}

export async function createProjectVariable(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string } & VariableInput,
): Promise<{ variableId: string }> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  return insertVariable(deps, { workspaceId: project.workspaceId, projectId: project.id }, input);
}

export async function updateProjectVariable(
  deps: DomainDeps,
  principal: Principal,
  input: { variableId: string } & Partial<VariableInput>,
): Promise<void> {
  const variable = await visibleVariable(deps, principal, input.variableId, VariableKind.Project);
  authorizeVariableWrite(principal, variable);
  await changeVariable(deps, variable, input);
}

export async function deleteProjectVariable(deps: DomainDeps, principal: Principal, variableId: string): Promise<void> {
  await removeVariable(deps, principal, await visibleVariable(deps, principal, variableId, VariableKind.Project));
}

export async function createProjectVariableValue(
  deps: DomainDeps,
  principal: Principal,
  input: { variableId: string; theValue: string } & FilterInput,
): Promise<{ variableValueId: string }> {
  return addValue(
    deps,
    principal,
    await visibleVariable(deps, principal, input.variableId, VariableKind.Project),
    input,
  );
}

export async function updateProjectVariableValue(
  deps: DomainDeps,
  principal: Principal,
  input: { variableValueId: string; theValue?: string | undefined } & FilterInput,
): Promise<void> {
  await changeValue(
    deps,
    principal,
    await visibleValue(deps, principal, input.variableValueId, VariableKind.Project),
    input,
  );
}

export async function deleteProjectVariableValue(
  deps: DomainDeps,
  principal: Principal,
  variableValueId: string,
): Promise<void> {
  await removeValue(deps, principal, await visibleValue(deps, principal, variableValueId, VariableKind.Project));
}

/**
 * Every value a project sees (its own and its imported workspace variables'), decrypted, for the
 * resolver. For the release snapshot and the engine: no principal, never for an API response.
 */
export async function loadVariableCandidates(deps: DomainDeps, projectId: string): Promise<CandidateValue[]> {
  const rows = await deps.store.variables.candidates(projectId);
  return rows.map(({ variable, value }) => {
    const sensitive = variable.variableType === VariableType.Sensitive;
    return {
      name: variable.name,
      sensitive,
      value: value.encrypted !== null ? deps.secrets.decrypt(value.encrypted) : (value.plain ?? ''),
      source: variable.projectId !== null ? 'Project' : 'Workspace',
      filters: value.filters,
      variableValueId: value.id,
    };
  });
}
