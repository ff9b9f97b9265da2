/**
 * Builds the parts of a release snapshot (core/release-snapshot.ts) from the project as it is now:
 * steps with their templates and resolved properties, rolling groups, variables (Sensitive values
 * stay sealed) and the lifecycle. Pure mapping; releases.ts reads the rows inside its transaction.
 */
import {
  ErrorAction,
  MachineOrder,
  OnMachineFailure,
  OnMemberFailure,
  OnNoTargets,
  type SnapshotLifecycle,
  type SnapshotRollingGroup,
  type SnapshotStep,
  type SnapshotStepTemplate,
  type SnapshotVariable,
} from '../core/index.ts';
import type { ProjectStep } from '../store/index.ts';
import type { RollingGroupRecord } from '../store/index.ts';
import type { StepTemplate } from '../store/index.ts';
import type { Variable, VariableValue } from '../store/index.ts';
import type { LifecycleReadModel } from './lifecycles.ts';
import { PACKAGE_SELECTOR } from './step-templates.ts';

/** Returns `value` when it is one of `allowed`, else `fallback` (stored values were validated on write). */
function oneOf<T extends string>(value: string, allowed: readonly T[], fallback: T): T {
  return (allowed as readonly string[]).includes(value) ? (value as T) : fallback;
}

/** Property values are strings in the snapshot (they are substituted into scripts and env vars). */
function toText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every property definition of a template, nested group `Properties` flattened (IDs are unique across levels). */
export function templateProperties(propertiesRaw: string): SnapshotStepTemplate['properties'] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(propertiesRaw);
  } catch {
    return [];
  }
  const out: SnapshotStepTemplate['properties'] = [];
  const walk = (list: unknown): void => {
    if (!Array.isArray(list)) return;
    for (const item of list) {
      if (!isObject(item) || typeof item.Id !== 'string') continue;
      out.push({
        Id: item.Id,
        Name: typeof item.Name === 'string' ? item.Name : item.Id,
        DefaultValue: toText(item.DefaultValue),
        ControlType: typeof item.ControlType === 'string' ? item.ControlType : '',
      });
      walk(item.Properties);
    }
  };
  walk(parsed);
  return out;
}

/** Template defaults, overridden by the step's propertiesJson; a null value there unsets the property. */
export function stepProperties(template: SnapshotStepTemplate, propertiesJson: string): Record<string, string> {
  const properties: Record<string, string> = {};
  for (const p of template.properties) if (p.DefaultValue !== null) properties[p.Id] = p.DefaultValue;
  let own: unknown;
  try {
    own = JSON.parse(propertiesJson);
  } catch {
    own = {};
  }
  if (isObject(own)) {
    for (const [id, value] of Object.entries(own)) {
      const text = toText(value);
      if (text === null) delete properties[id];
      else properties[id] = text;
    }
  }
  return properties;
}

export function templateSnapshot(template: StepTemplate): SnapshotStepTemplate {
  return {
    stepTemplateId: template.id,
    name: template.name,
    script: template.script,
    scriptLanguage: oneOf(template.scriptLanguage, ['bash', 'sh', 'python', 'powershell'] as const, 'bash'),
    properties: templateProperties(template.propertiesRaw),
  };
}

/**
 * One step as the release freezes it. `canonicalPackageId` maps a package ID to the one spelling
 * the release uses for it (package IDs are case-insensitive, and the engine matches step
 * packageIds against snapshot packages exactly).
 */
export function stepSnapshot(
  step: ProjectStep,
  template: SnapshotStepTemplate,
  canonicalPackageId: (id: string) => string,
): SnapshotStep {
  const properties = stepProperties(template, step.propertiesJson);
  return {
    stepId: step.id,
    name: step.name,
    sortOrder: step.sortOrder,
    errorAction: oneOf(step.errorAction, Object.values(ErrorAction), ErrorAction.Stop),
    disabled: step.disabled,
    parallelMachines: step.parallelMachines,
    environmentIds: step.environmentIds,
    machineIdFilter: step.machineIdFilter,
    machineTagFilter: step.machineTagFilter,
    rollingGroupId: step.rollingGroupId,
    properties,
    template,
    packageIds: [...new Set(packageReferences(template, properties).map(canonicalPackageId))],
  };
}

/** A step's PackageSelector properties with the value each has (trimmed; '' when left empty). */
export function packageSelections(
  template: SnapshotStepTemplate,
  properties: Record<string, string>,
): Array<{ property: SnapshotStepTemplate['properties'][number]; packageId: string }> {
  return template.properties
    .filter((p) => p.ControlType === PACKAGE_SELECTOR)
    .map((property) => ({ property, packageId: (properties[property.Id] ?? '').trim() }));
}

/** The package IDs a step references: the non-empty values of its PackageSelector properties (contract §3). */
export function packageReferences(template: SnapshotStepTemplate, properties: Record<string, string>): string[] {
  return packageSelections(template, properties)
    .map((selection) => selection.packageId)
    .filter((id) => id !== '');
}

/** Groups with their member steps in step order, ordered by their first member (spec §2.5). Empty groups are left out. */
export function rollingGroupSnapshots(
  groups: readonly RollingGroupRecord[],
  steps: readonly ProjectStep[],
): SnapshotRollingGroup[] {
  const ordered = [...steps].sort((a, b) => a.sortOrder - b.sortOrder);
  return groups
    .map((g) => ({ group: g, members: ordered.filter((s) => s.rollingGroupId === g.id) }))
    .filter(({ members }) => members.length > 0)
    .sort((a, b) => (a.members[0]?.sortOrder ?? 0) - (b.members[0]?.sortOrder ?? 0))
    .map(({ group: g, members }) => ({
      rollingGroupId: g.id,
      name: g.name,
      windowSize: g.windowSize,
      machineOrder: oneOf(g.machineOrder, Object.values(MachineOrder), MachineOrder.MachineName),
      machineOrderTagIds: g.machineOrderTagIds,
      waitBetweenMachineGroups: g.waitBetweenMachineGroups,
      onMachineFailure: oneOf(g.onMachineFailure, Object.values(OnMachineFailure), OnMachineFailure.StopStep),
      onMemberFailure: oneOf(g.onMemberFailure, Object.values(OnMemberFailure), OnMemberFailure.SkipRestOnThisMachine),
      onNoTargets: oneOf(g.onNoTargets, Object.values(OnNoTargets), OnNoTargets.Skip),
      memberStepIds: members.map((s) => s.id),
    }));
}

/**
 * The variables the project sees, with every value and its filters. Sensitive values keep the
 * stored ciphertext (never decrypted here), so a release row never holds a secret in clear.
 */
export function variableSnapshots(
  candidates: ReadonlyArray<{ variable: Variable; value: VariableValue }>,
): SnapshotVariable[] {
  const byId = new Map<string, SnapshotVariable>();
  for (const { variable, value } of candidates) {
    let entry = byId.get(variable.id);
    if (!entry) {
      entry = {
        variableId: variable.id,
        name: variable.name,
        variableType: variable.variableType,
        source: variable.projectId === null ? 'workspace' : 'project',
        values: [],
      };
      byId.set(variable.id, entry);
    }
    const sensitive = variable.variableType === 'Sensitive';
    entry.values.push({
      value: sensitive ? null : (value.plain ?? ''),
      valueEncrypted: sensitive ? value.encrypted : null,
      environmentsFilter: value.filters.environmentIds,
      machineFilter: value.filters.machineIds,
      tagFilter: value.filters.tagFilter,
      stepFilter: value.filters.stepIds,
      channelFilter: value.filters.channelIds,
    });
  }
  return [...byId.values()];
}

export function lifecycleSnapshot(lifecycle: LifecycleReadModel | null): SnapshotLifecycle | null {
  if (!lifecycle) return null;
  return {
    lifecycleId: lifecycle.lifecycleId,
    name: lifecycle.name,
    phases: [...lifecycle.phases]
      .sort((a, b) => a.sortOrder - b.sortOrder)
      .map((p) => ({
        phaseId: p.phaseId,
        name: p.name,
        sortOrder: p.sortOrder,
        progressRequirement: p.progressRequirement,
        progressRequirementErrorMode: p.progressRequirementErrorMode,
        progressRequirementCount: p.progressRequirementCount,
        environments: p.environments.map((e) => ({
          environmentId: e.environmentId,
          environmentName: e.environmentName,
          howToTrigger: e.howToTrigger,
        })),
      })),
  };
}
