/**
 * Rolling groups (spec §2.5, §4.10, contract §3): use cases. The rules themselves are pure, in
 * rolling-group-rules.ts; here they are fed the project's steps, the organization's
 * maxParallelMachines and the workspace's tags, inside one transaction per change.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  unknownId,
  type Principal,
  type ValidationError,
} from '../core/index.ts';
import type { RollingGroupRecord, RollingGroupSettings } from '../store/index.ts';
import type { Store } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { layoutOf, visibleStep } from './project-steps.ts';
import { visibleProject } from './projects.ts';
import {
  DEFAULT_GROUP_SETTINGS,
  DEFAULT_MAX_PARALLEL_MACHINES,
  membersOf,
  orderOf,
  splitGroups,
  validateForbiddenFields,
  validateMove,
  validateNewMembers,
  validateSettings,
  type SettingsContext,
  type StepSlot,
} from './rolling-group-rules.ts';
import { visibleResource, withUniqueName } from './scope.ts';

export interface RollingGroup extends RollingGroupRecord {
  /** 1-based position of the first member step (spec §2.5: derived, never accepted). */
  order: number;
  memberStepIds: string[];
}

type SettingsInput = { [K in keyof RollingGroupSettings]?: RollingGroupSettings[K] | undefined };

function refuse(message: string, errors: ValidationError[]): never {
  throw new InvalidParameterError(
    `${message}: ${errors.map((e) => `${e.property} ${e.messages.join('; ')}`).join(', ')}`,
    errors,
  );
}

async function settingsContext(
  store: Store,
  principal: Principal,
  workspaceId: string,
  tagIds: readonly string[],
): Promise<SettingsContext> {
  const organization = await store.organizations.get(principal.organizationId);
  const tags = await store.tags.getMany(workspaceId, [...new Set(tagIds)]);
  return {
    maxParallelMachines: organization?.maxParallelMachines ?? DEFAULT_MAX_PARALLEL_MACHINES,
    workspaceTagIds: new Set(tags.map((t) => t.id)),
  };
}

function withMembership(group: RollingGroupRecord, layout: readonly StepSlot[]): RollingGroup {
  return { ...group, order: orderOf(layout, group.id) ?? 0, memberStepIds: membersOf(layout).get(group.id) ?? [] };
}

function pickSettings(input: SettingsInput): Partial<RollingGroupSettings> {
  const settings: Partial<RollingGroupSettings> = {};
  for (const key of Object.keys(DEFAULT_GROUP_SETTINGS).concat('name') as Array<keyof RollingGroupSettings>) {
    if (input[key] !== undefined) Object.assign(settings, { [key]: input[key] });
  }
  return settings;
}

/**
 * The project's groups ordered by `order`. A stored group that no longer validates (say the
 * organization lowered maxParallelMachines below its windowSize) makes the read fail with 400
 * and validationErrors (spec §7.3), so nobody deploys with settings the rules now refuse.
 */
export async function listRollingGroups(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<{ projectId: string; rollingGroups: RollingGroup[] }> {
  // Spec §7.3 words this refusal "invalid project ID".
  const project = await visibleProject(deps, principal, projectId).catch((error: unknown) => {
    if (error instanceof InvalidParameterError)
      throw new InvalidParameterError('Invalid project ID: not found', error.validationErrors);
    throw error;
  });
  authorize(principal, Capability.EditProject, { projectId: project.id });
  const [records, steps] = await Promise.all([
    deps.store.rollingGroups.listByProject(project.id),
    deps.store.projectSteps.listByProject(project.id),
  ]);
  const layout = layoutOf(steps);
  const groups = records
    .map((g) => withMembership(g, layout))
    .sort((a, b) => a.order - b.order || a.id.localeCompare(b.id));
  const context = await settingsContext(
    deps.store,
    principal,
    project.workspaceId,
    groups.flatMap((g) => g.machineOrderTagIds),
  );
  const split = new Set(splitGroups(layout));
  const errors = groups.flatMap((group, index) => {
    const prefix = `rollingGroups[${index}].`;
    const found = validateSettings(group, context, prefix).map((e) => ({
      ...e,
      messages: e.messages.map((m) => `${m} (group '${group.name}')`),
    }));
    if (group.memberStepIds.length === 0)
      found.push({ property: `${prefix}memberStepIds`, messages: [`group '${group.name}' has no member steps`] });
    if (split.has(group.id))
      found.push({
        property: `${prefix}memberStepIds`,
        messages: [`member steps of group '${group.name}' are not consecutive`],
      });
    return found;
  });
  if (errors.length > 0) refuse('Stored rolling group settings failed validation', errors);
  return { projectId: project.id, rollingGroups: groups };
}

export async function createRollingGroup(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; memberStepIds: string[]; order?: unknown } & SettingsInput & { name: string },
): Promise<{ rollingGroupId: string }> {
  // A forbidden field is wrong whatever the state, so it is reported before anything is looked up.
  const forbidden = validateForbiddenFields(input, 'create');
  if (forbidden.length > 0) refuse('Invalid rolling group', forbidden);
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  const settings: RollingGroupSettings = {
    ...DEFAULT_GROUP_SETTINGS,
    machineOrderTagIds: [],
    ...pickSettings(input),
    name: input.name,
  };
  const id = newId();
  await deps.store.transaction(async (tx) => {
    if (!(await tx.projectSteps.lockProject(project.id))) throw unknownId('projectId');
    const layout = layoutOf(await tx.projectSteps.listByProject(project.id));
    const context = await settingsContext(tx, principal, project.workspaceId, settings.machineOrderTagIds);
    const errors = [...validateSettings(settings, context), ...validateNewMembers(layout, input.memberStepIds)];
    if (errors.length > 0) refuse('Invalid rolling group', errors);
    await withUniqueName('name', settings.name, () =>
      tx.rollingGroups.insert({ id, projectId: project.id, ...settings }),
    );
    await tx.projectSteps.setRollingGroup(input.memberStepIds, id);
  });
  return { rollingGroupId: id };
}

/** Changes a group's own settings; membership and order are never changed here. */
export async function updateRollingGroup(
  deps: DomainDeps,
  principal: Principal,
  input: { rollingGroupId: string; order?: unknown; memberStepIds?: unknown } & SettingsInput,
): Promise<void> {
  const forbidden = validateForbiddenFields(input, 'update');
  if (forbidden.length > 0) refuse('Invalid rolling group', forbidden);
  const group = await visibleResource(
    deps,
    principal,
    deps.store.rollingGroups.get(input.rollingGroupId),
    'rollingGroupId',
  );
  authorize(principal, Capability.EditProject, { projectId: group.projectId });
  const patch = pickSettings(input);
  // The whole resulting group must validate, e.g. switching to MachineName needs the tags emptied too.
  const merged: RollingGroupSettings = { ...group, ...patch };
  const context = await settingsContext(deps.store, principal, group.workspaceId, merged.machineOrderTagIds);
  const errors = validateSettings(merged, context);
  if (errors.length > 0) refuse('Invalid rolling group', errors);
  await withUniqueName('name', merged.name, () => deps.store.rollingGroups.update(group.id, patch));
}

/** Dissolves a group; its steps stay where they are, in no group. */
export async function deleteRollingGroup(
  deps: DomainDeps,
  principal: Principal,
  rollingGroupId: string,
): Promise<void> {
  const group = await visibleResource(deps, principal, deps.store.rollingGroups.get(rollingGroupId), 'rollingGroupId');
  authorize(principal, Capability.EditProject, { projectId: group.projectId });
  await deps.store.transaction(async (tx) => {
    await tx.projectSteps.lockProject(group.projectId);
    await tx.rollingGroups.delete(group.id);
  });
}

/** Moves one step into a group or (null) out of its group, only at either end of the group's run. */
export async function moveStepToRollingGroup(
  deps: DomainDeps,
  principal: Principal,
  input: { projectStepId: string; rollingGroupId: string | null },
): Promise<void> {
  const step = await visibleStep(deps, principal, input.projectStepId);
  authorize(principal, Capability.EditProject, { projectId: step.projectId });
  if (input.rollingGroupId !== null) {
    const group = await deps.store.rollingGroups.get(input.rollingGroupId);
    if (!group || group.projectId !== step.projectId) throw unknownId('rollingGroupId');
  }
  await deps.store.transaction(async (tx) => {
    await tx.projectSteps.lockProject(step.projectId);
    const layout = layoutOf(await tx.projectSteps.listByProject(step.projectId));
    const groupIds = (await tx.rollingGroups.listByProject(step.projectId)).map((g) => g.id);
    const errors = validateMove(layout, step.id, input.rollingGroupId, groupIds);
    if (errors.length > 0) refuse('Invalid rolling group membership', errors);
    await tx.projectSteps.setRollingGroup([step.id], input.rollingGroupId);
  });
}
