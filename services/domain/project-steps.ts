/**
 * Project steps (spec §4.11, contract §3): the ordered deployment process of a project. Every
 * change to the list itself (append, delete, reorder, clone) runs in one transaction holding the
 * project's row lock, so positions stay 1..n and rolling groups stay unbroken.
 */
import {
  authorize,
  Capability,
  ErrorAction,
  InvalidParameterError,
  newId,
  unknownId,
  type Principal,
} from '../core/index.ts';
import type { ProjectStep, TagSet } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { validateReorder, type StepSlot } from './rolling-group-rules.ts';
import { visibleResource, withUniqueName } from './scope.ts';
import { requireTags } from './tags.ts';

/** Loads a step of a live project the principal may see, else 400 naming `property`. */
export async function visibleStep(
  deps: DomainDeps,
  principal: Principal,
  projectStepId: string,
  property = 'projectStepId',
): Promise<ProjectStep> {
  return visibleResource(deps, principal, deps.store.projectSteps.get(projectStepId), property);
}

export function layoutOf(steps: readonly ProjectStep[]): StepSlot[] {
  return steps.map((s) => ({ stepId: s.id, rollingGroupId: s.rollingGroupId }));
}

export async function listProjectSteps(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<{ projectId: string; steps: ProjectStep[] }> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  return { projectId: project.id, steps: await deps.store.projectSteps.listByProject(project.id) };
}

/** Appends a step at the end of the project's list (spec §4.11). */
export async function createProjectStep(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; name: string; stepTemplateId: string; propertiesJson?: string | undefined },
): Promise<{ projectStepId: string }> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  if (input.propertiesJson !== undefined) checkPropertiesJson(input.propertiesJson);
  const id = newId();
  await deps.store.transaction(async (tx) => {
    if (!(await tx.projectSteps.lockProject(project.id))) throw unknownId('projectId');
    // The share lock keeps the template from being deleted before this step is committed.
    const template = await tx.stepTemplates.get(input.stepTemplateId, 'share');
    if (!template || template.workspaceId !== project.workspaceId) throw unknownId('stepTemplateId');
    await withUniqueName('name', input.name, async () =>
      tx.projectSteps.insert({
        id,
        projectId: project.id,
        name: input.name,
        description: null,
        stepTemplateId: template.id,
        sortOrder: (await tx.projectSteps.maxSortOrder(project.id)) + 1,
        runMode: null,
        errorAction: ErrorAction.Stop,
        disabled: false,
        parallelMachines: null,
        environmentIds: [],
        machineIdFilter: [],
        machineTagFilter: [],
        propertiesJson: input.propertiesJson ?? '{}',
        rollingGroupId: null,
      }),
    );
  });
  return { projectStepId: id };
}

export interface ProjectStepUpdate {
  projectStepId: string;
  name?: string | undefined;
  description?: string | null | undefined;
  runMode?: string | null | undefined;
  errorAction?: ErrorAction | undefined;
  disabled?: boolean | undefined;
  parallelMachines?: number | null | undefined;
  environments?: string[] | undefined;
  machineIdFilter?: string[] | undefined;
  machineTagFilter?: TagSet[] | undefined;
  propertiesJson?: string | undefined;
}

function checkPropertiesJson(raw: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidParameterError('propertiesJson must be a JSON string of an object {propertyId: value}', [
      { property: 'propertiesJson', messages: ['must be a JSON object of {propertyId: value}'] },
    ]);
  }
}

/** Checks every cross-reference of an update against the step's workspace and template. */
async function checkReferences(deps: DomainDeps, step: ProjectStep, input: ProjectStepUpdate): Promise<void> {
  if (input.environments !== undefined) {
    const unique = [...new Set(input.environments)];
    if ((await deps.store.environments.getMany(step.workspaceId, unique)).length !== unique.length)
      throw unknownId('environments');
  }
  if (input.machineIdFilter !== undefined) {
    const unique = [...new Set(input.machineIdFilter)];
    if ((await deps.store.projectSteps.countMachines(step.workspaceId, unique)) !== unique.length)
      throw unknownId('machineIdFilter');
  }
  if (input.machineTagFilter !== undefined) {
    await requireTags(
      deps,
      step.workspaceId,
      input.machineTagFilter.flatMap((set) => set.tagIds),
      'machineTagFilter',
    );
  }
  if (input.propertiesJson !== undefined) checkPropertiesJson(input.propertiesJson);
  if (input.runMode !== undefined && input.runMode !== null) {
    const template = await deps.store.stepTemplates.get(step.stepTemplateId);
    const supported = template?.supportedRunModes ?? [];
    if (!supported.includes(input.runMode)) {
      throw new InvalidParameterError(`runMode '${input.runMode}' is not supported by the step's template`, [
        { property: 'runMode', messages: [`must be one of the template's supportedRunModes: ${supported.join(', ')}`] },
      ]);
    }
  }
}

/** Changes only the fields sent (contract §3). */
export async function updateProjectStep(
  deps: DomainDeps,
  principal: Principal,
  input: ProjectStepUpdate,
): Promise<void> {
  const step = await visibleStep(deps, principal, input.projectStepId);
  authorize(principal, Capability.EditProject, { projectId: step.projectId });
  await checkReferences(deps, step, input);
  await withUniqueName('name', input.name ?? step.name, () =>
    deps.store.projectSteps.update(step.id, {
      name: input.name,
      description: input.description,
      runMode: input.runMode,
      errorAction: input.errorAction,
      disabled: input.disabled,
      parallelMachines: input.parallelMachines,
      environmentIds: input.environments === undefined ? undefined : [...new Set(input.environments)],
      machineIdFilter: input.machineIdFilter === undefined ? undefined : [...new Set(input.machineIdFilter)],
      machineTagFilter: input.machineTagFilter?.map((set) => ({ tagIds: [...new Set(set.tagIds)] })),
      propertiesJson: input.propertiesJson,
    }),
  );
}

/**
 * Removes a step and closes the gap. A rolling group stays unbroken (its remaining members are
 * still adjacent once the step is gone); a group whose only member this was is deleted with it,
 * since a group is never empty.
 */
export async function deleteProjectStep(deps: DomainDeps, principal: Principal, projectStepId: string): Promise<void> {
  const step = await visibleStep(deps, principal, projectStepId);
  authorize(principal, Capability.EditProject, { projectId: step.projectId });
  await deps.store.transaction(async (tx) => {
    await tx.projectSteps.lockProject(step.projectId);
    const steps = await tx.projectSteps.listByProject(step.projectId);
    const current = steps.find((s) => s.id === step.id);
    if (!current) throw unknownId('projectStepId');
    await tx.projectSteps.delete(current.id);
    const remaining = steps.filter((s) => s.id !== current.id);
    if (current.rollingGroupId !== null && !remaining.some((s) => s.rollingGroupId === current.rollingGroupId)) {
      await tx.rollingGroups.delete(current.rollingGroupId);
    }
    await tx.projectSteps.setOrder(
      step.projectId,
      remaining.map((s) => s.id),
    );
  });
}

/** Replaces the order of a project's steps: exactly its steps, splitting no rolling group. */
export async function reorderProjectSteps(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; projectStepIds: string[] },
): Promise<void> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  await deps.store.transaction(async (tx) => {
    await tx.projectSteps.lockProject(project.id);
    const steps = await tx.projectSteps.listByProject(project.id);
    const errors = validateReorder(layoutOf(steps), input.projectStepIds);
    if (errors.length > 0)
      throw new InvalidParameterError(`Invalid step order: ${errors[0]?.messages[0] ?? ''}`, errors);
    await tx.projectSteps.setOrder(project.id, input.projectStepIds);
  });
}

/** "Deploy", "Deploy - Copy", "Deploy - Copy 2", … the first not taken (case-insensitive). */
export function copyName(name: string, taken: readonly string[]): string {
  const used = new Set(taken.map((n) => n.toLowerCase()));
  const base = `${name} - Copy`;
  if (!used.has(base.toLowerCase())) return base;
  for (let n = 2; ; n++) if (!used.has(`${base} ${n}`.toLowerCase())) return `${base} ${n}`;
}

/** Copies a step, appended at the end of the same or another project of its workspace, in no rolling group. */
export async function cloneProjectStep(
  deps: DomainDeps,
  principal: Principal,
  input: { projectStepId: string; targetProjectId?: string | undefined; name?: string | undefined },
): Promise<{ projectStepId: string }> {
  const source = await visibleStep(deps, principal, input.projectStepId);
  authorize(principal, [Capability.View, Capability.EditProject], { projectId: source.projectId });
  const target = await visibleProject(deps, principal, input.targetProjectId ?? source.projectId, 'targetProjectId');
  // Environments, machines, tags and the template are workspace-scoped: they only make sense there.
  if (target.workspaceId !== source.workspaceId) throw unknownId('targetProjectId');
  authorize(principal, Capability.EditProject, { projectId: target.id });
  const id = newId();
  await deps.store.transaction(async (tx) => {
    if (!(await tx.projectSteps.lockProject(target.id))) throw unknownId('targetProjectId');
    const siblings = await tx.projectSteps.listByProject(target.id);
    const name =
      input.name ??
      copyName(
        source.name,
        siblings.map((s) => s.name),
      );
    if (!(await tx.stepTemplates.get(source.stepTemplateId, 'share'))) throw unknownId('projectStepId');
    await withUniqueName('name', name, async () =>
      tx.projectSteps.insert({
        ...source,
        id,
        projectId: target.id,
        name,
        sortOrder: (siblings.at(-1)?.sortOrder ?? 0) + 1,
        rollingGroupId: null,
      }),
    );
  });
  return { projectStepId: id };
}
