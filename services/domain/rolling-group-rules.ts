/**
 * The rules of spec §2.5 as pure functions (no I/O): a rolling group's settings, and the shape of
 * its membership within the project's step list. Each returns the violations it finds as
 * validationErrors ([] when valid), so a caller can report every problem at once.
 *
 * Glossary: a *layout* is the project's steps in order, each with the group it belongs to (or
 * null). A group's *run* is the stretch of the layout its members occupy; it must be unbroken.
 */
import { MachineOrder, OnMachineFailure, OnMemberFailure, OnNoTargets, type ValidationError } from '../core/index.ts';

/** The organization default of `maxParallelMachines` (spec §8). */
export const DEFAULT_MAX_PARALLEL_MACHINES = 8;

export interface GroupSettings {
  name: string;
  windowSize: number;
  machineOrder: string;
  machineOrderTagIds: readonly string[];
  waitBetweenMachineGroups: boolean;
  onMachineFailure: string;
  onMemberFailure: string;
  onNoTargets: string;
}

/** Every setting but the name, at its spec default. */
export const DEFAULT_GROUP_SETTINGS = {
  windowSize: 1,
  machineOrder: MachineOrder.MachineName,
  machineOrderTagIds: [] as readonly string[],
  waitBetweenMachineGroups: false,
  onMachineFailure: OnMachineFailure.StopStep,
  onMemberFailure: OnMemberFailure.SkipRestOnThisMachine,
  onNoTargets: OnNoTargets.Skip,
} as const satisfies Omit<GroupSettings, 'name'>;

export interface SettingsContext {
  /** The organization's `maxParallelMachines`. */
  maxParallelMachines: number;
  /** The tags of the project's workspace (machineOrderTagIds must name only these). */
  workspaceTagIds: ReadonlySet<string>;
}

/** One step of a layout, in step order. */
export interface StepSlot {
  stepId: string;
  rollingGroupId: string | null;
}

function error(property: string, ...messages: string[]): ValidationError {
  return { property, messages };
}

function oneOf(property: string, value: string, allowed: Record<string, string>): ValidationError[] {
  const values = Object.values(allowed);
  return values.includes(value) ? [] : [error(property, `must be one of ${values.join(', ')}`)];
}

/** Settings rules of §2.5: window bounds, machine order and its tags, the failure enums. */
export function validateSettings(settings: GroupSettings, context: SettingsContext, prefix = ''): ValidationError[] {
  const at = (property: string) => `${prefix}${property}`;
  const errors: ValidationError[] = [];
  if (settings.name.trim() === '') errors.push(error(at('name'), 'must not be empty'));
  if (!Number.isInteger(settings.windowSize) || settings.windowSize < 1) {
    errors.push(error(at('windowSize'), 'must be an integer of at least 1'));
  } else if (settings.windowSize > context.maxParallelMachines) {
    errors.push(
      error(
        at('windowSize'),
        `must not exceed the organization's maxParallelMachines (${context.maxParallelMachines})`,
      ),
    );
  }
  errors.push(...oneOf(at('machineOrder'), settings.machineOrder, MachineOrder));
  const tagIds = settings.machineOrderTagIds;
  if (settings.machineOrder === MachineOrder.MachineName && tagIds.length > 0) {
    errors.push(error(at('machineOrderTagIds'), 'must be empty when machineOrder is MachineName'));
  }
  if (settings.machineOrder === MachineOrder.TagPriority && tagIds.length === 0) {
    errors.push(error(at('machineOrderTagIds'), 'must name at least one tag when machineOrder is TagPriority'));
  }
  if (new Set(tagIds).size !== tagIds.length) errors.push(error(at('machineOrderTagIds'), 'must not repeat a tag'));
  const unknown = tagIds.filter((id) => !context.workspaceTagIds.has(id));
  if (unknown.length > 0)
    errors.push(error(at('machineOrderTagIds'), `unknown tag IDs: ${[...new Set(unknown)].join(', ')}`));
  if (settings.waitBetweenMachineGroups && settings.machineOrder !== MachineOrder.TagPriority) {
    errors.push(error(at('waitBetweenMachineGroups'), 'can only be true when machineOrder is TagPriority'));
  }
  errors.push(...oneOf(at('onMachineFailure'), settings.onMachineFailure, OnMachineFailure));
  errors.push(...oneOf(at('onMemberFailure'), settings.onMemberFailure, OnMemberFailure));
  errors.push(...oneOf(at('onNoTargets'), settings.onNoTargets, OnNoTargets));
  return errors;
}

/** Fields a caller may never send: `order` is always derived; membership changes go elsewhere on update. */
export function validateForbiddenFields(
  sent: { order?: unknown; memberStepIds?: unknown },
  operation: 'create' | 'update',
): ValidationError[] {
  const errors: ValidationError[] = [];
  if (sent.order !== undefined)
    errors.push(error('order', 'is derived from the position of the first member step and is never accepted'));
  if (operation === 'update' && sent.memberStepIds !== undefined) {
    errors.push(
      error('memberStepIds', 'cannot be changed here; use PUT /api/project/step/rolling-group to move one step'),
    );
  }
  return errors;
}

/** Each group's members in step order. */
export function membersOf(layout: readonly StepSlot[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const slot of layout) {
    if (slot.rollingGroupId === null) continue;
    const members = groups.get(slot.rollingGroupId) ?? [];
    members.push(slot.stepId);
    groups.set(slot.rollingGroupId, members);
  }
  return groups;
}

/** A group's `order`: the 1-based position of its first member step, or null when it has none. */
export function orderOf(layout: readonly StepSlot[], rollingGroupId: string): number | null {
  const index = layout.findIndex((slot) => slot.rollingGroupId === rollingGroupId);
  return index < 0 ? null : index + 1;
}

/** Groups whose members do not form one unbroken run in the layout. */
export function splitGroups(layout: readonly StepSlot[]): string[] {
  const closed = new Set<string>();
  const split = new Set<string>();
  let current: string | null = null;
  for (const slot of layout) {
    if (slot.rollingGroupId !== current) {
      if (current !== null) closed.add(current);
      if (slot.rollingGroupId !== null && closed.has(slot.rollingGroupId)) split.add(slot.rollingGroupId);
      current = slot.rollingGroupId;
    }
  }
  return [...split];
}

/** Layout rules: every group's members are consecutive; `groupIds` (when given) are each non-empty. */
export function validateLayout(
  layout: readonly StepSlot[],
  property: string,
  groupIds: readonly string[] = [],
): ValidationError[] {
  const errors = splitGroups(layout).map((id) =>
    error(property, `would split rolling group ${id}: its member steps must stay consecutive`),
  );
  const members = membersOf(layout);
  for (const id of groupIds)
    if (!members.has(id)) errors.push(error(property, `would leave rolling group ${id} without member steps`));
  return errors;
}

/** Members of a new group: at least one, no repeats, steps of the project, in no other group, consecutive. */
export function validateNewMembers(layout: readonly StepSlot[], memberStepIds: readonly string[]): ValidationError[] {
  const property = 'memberStepIds';
  if (memberStepIds.length === 0) return [error(property, 'must name at least one step')];
  if (new Set(memberStepIds).size !== memberStepIds.length) return [error(property, 'must not repeat a step')];
  const positions = new Map(layout.map((slot, index) => [slot.stepId, index]));
  const unknown = memberStepIds.filter((id) => !positions.has(id));
  if (unknown.length > 0) return [error(property, `not steps of the project: ${unknown.join(', ')}`)];
  const taken = memberStepIds.filter((id) => layout[positions.get(id) ?? -1]?.rollingGroupId != null);
  if (taken.length > 0) return [error(property, `already in another rolling group: ${taken.join(', ')}`)];
  const indexes = memberStepIds.map((id) => positions.get(id) ?? -1).sort((a, b) => a - b);
  const first = indexes[0] ?? 0;
  const last = indexes[indexes.length - 1] ?? 0;
  if (last - first + 1 !== indexes.length) return [error(property, 'must be consecutive steps of the project')];
  return [];
}

/** A new step order: exactly a permutation of the project's steps, splitting no group. */
export function validateReorder(layout: readonly StepSlot[], newOrder: readonly string[]): ValidationError[] {
  const property = 'projectStepIds';
  const current = new Map(layout.map((slot) => [slot.stepId, slot]));
  if (new Set(newOrder).size !== newOrder.length) return [error(property, 'must not repeat a step')];
  const unknown = newOrder.filter((id) => !current.has(id));
  if (unknown.length > 0) return [error(property, `not steps of the project: ${unknown.join(', ')}`)];
  if (newOrder.length !== layout.length) {
    const missing = layout.filter((slot) => !newOrder.includes(slot.stepId)).map((slot) => slot.stepId);
    return [error(property, `must list every step of the project; missing: ${missing.join(', ')}`)];
  }
  const reordered = newOrder.map((id) => current.get(id) ?? { stepId: id, rollingGroupId: null });
  return validateLayout(reordered, property);
}

/**
 * Moving one step into a group (`targetGroupId`) or out of its group (null): allowed only at
 * either end of a run, so no group becomes split or empty. `projectGroupIds` are the project's groups.
 */
export function validateMove(
  layout: readonly StepSlot[],
  stepId: string,
  targetGroupId: string | null,
  projectGroupIds: readonly string[],
): ValidationError[] {
  const slot = layout.find((s) => s.stepId === stepId);
  if (!slot) return [error('projectStepId', 'not a step of the project')];
  if (targetGroupId !== null && !projectGroupIds.includes(targetGroupId))
    return [error('rollingGroupId', "not a rolling group of the step's project")];
  if (slot.rollingGroupId === targetGroupId) return [];
  const moved = layout.map((s) => (s.stepId === stepId ? { stepId, rollingGroupId: targetGroupId } : s));
  const affected = [slot.rollingGroupId, targetGroupId].filter((id): id is string => id !== null);
  const members = membersOf(moved);
  const errors: ValidationError[] = [];
  if (slot.rollingGroupId !== null && !members.has(slot.rollingGroupId)) {
    errors.push(
      error(
        'projectStepId',
        'is the only member of its rolling group; a group never becomes empty (delete the group instead)',
      ),
    );
  }
  const split = splitGroups(moved).filter((id) => affected.includes(id));
  if (split.length > 0) {
    errors.push(
      error('projectStepId', 'can only join or leave a rolling group at either end of its run of consecutive steps'),
    );
  }
  return errors;
}
