/**
 * Step templates (contract §3): a workspace's reusable scripts. `propertiesRaw` is a JSON string
 * of property definitions; steps fill them in through their `propertiesJson`.
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
import type { StepTemplate } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export const ScriptLanguage = { bash: 'bash', sh: 'sh', python: 'python', powershell: 'powershell' } as const;
export type ScriptLanguage = (typeof ScriptLanguage)[keyof typeof ScriptLanguage];

/** The run mode of the built-in library templates; used when a template names none. */
export const DEFAULT_RUN_MODES: readonly string[] = ['TargetMachine'];

/** ControlType of a property whose value names a package of the workspace package store. */
export const PACKAGE_SELECTOR = 'PackageSelector';

export interface TemplateProperty {
  Id: string;
  Name: string;
  Description: string | null;
  DefaultValue: unknown;
  ControlType: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Problems with one level of property definitions (nested `Properties` of groups included). */
function propertyProblems(list: unknown, path: string, seen: Set<string>): string[] {
  if (!Array.isArray(list)) return [`${path} must be a JSON array of property definitions`];
  const problems: string[] = [];
  list.forEach((item: unknown, index) => {
    const at = `${path}[${index}]`;
    if (!isObject(item)) {
      problems.push(`${at} must be an object`);
      return;
    }
    if (typeof item.Id !== 'string' || item.Id.trim() === '') problems.push(`${at}.Id must be a non-empty string`);
    else if (seen.has(item.Id)) problems.push(`${at}.Id '${item.Id}' is defined twice`);
    else seen.add(item.Id);
    if (typeof item.Name !== 'string') problems.push(`${at}.Name must be a string`);
    if (item.Description !== undefined && item.Description !== null && typeof item.Description !== 'string') {
      problems.push(`${at}.Description must be a string or null`);
    }
    if (typeof item.ControlType !== 'string' || item.ControlType.trim() === '')
      problems.push(`${at}.ControlType must be a non-empty string`);
    if (item.Properties !== undefined) problems.push(...propertyProblems(item.Properties, `${at}.Properties`, seen));
  });
  return problems;
}

/** Parses `propertiesRaw` into its definitions, or throws 400 naming every problem. */
export function parseTemplateProperties(raw: string, property = 'propertiesRaw'): TemplateProperty[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidParameterError(`${property} is not valid JSON`, [
      { property, messages: ['must be a JSON string of [{Id, Name, Description, DefaultValue, ControlType}]'] },
    ]);
  }
  const problems = propertyProblems(parsed, property, new Set());
  if (problems.length > 0)
    throw new InvalidParameterError(`Invalid ${property}: ${problems[0] ?? ''}`, [{ property, messages: problems }]);
  return (parsed as Array<Record<string, unknown>>).map((p) => ({
    Id: p.Id as string,
    Name: p.Name as string,
    Description: (p.Description as string | null | undefined) ?? null,
    DefaultValue: p.DefaultValue ?? null,
    ControlType: p.ControlType as string,
  }));
}

function checkRunModes(modes: readonly string[] | undefined): void {
  if (modes === undefined) return;
  if (new Set(modes).size !== modes.length) {
    throw new InvalidParameterError('supportedRunModes lists a run mode twice', [
      { property: 'supportedRunModes', messages: ['must not repeat a run mode'] },
    ]);
  }
}

export interface StepTemplateInput {
  name: string;
  description?: string | null | undefined;
  script: string;
  scriptLanguage: ScriptLanguage;
  supportedRunModes?: string[] | undefined;
  propertiesRaw?: string | undefined;
}

export async function listStepTemplates(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<StepTemplate>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  return deps.store.stepTemplates.list(workspace.id, toPage(query));
}

/** One template by ID, or by workspace and name (case-insensitive). */
export async function getStepTemplate(
  deps: DomainDeps,
  principal: Principal,
  query: { stepTemplateId?: string | undefined; workspaceId?: string | undefined; name?: string | undefined },
): Promise<StepTemplate> {
  let template: StepTemplate;
  if (query.stepTemplateId !== undefined) {
    template = await visibleResource(
      deps,
      principal,
      deps.store.stepTemplates.get(query.stepTemplateId),
      'stepTemplateId',
    );
  } else if (query.workspaceId !== undefined && query.name !== undefined) {
    const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
    const found = await deps.store.stepTemplates.findByName(workspace.id, query.name);
    if (!found)
      throw new InvalidParameterError(`Invalid name: no step template named '${query.name}'`, [
        { property: 'name', messages: ['not found'] },
      ]);
    template = found;
  } else {
    throw new InvalidParameterError('Give stepTemplateId, or workspaceId and name', [
      { property: 'stepTemplateId', messages: ['stepTemplateId, or workspaceId and name, is required'] },
    ]);
  }
  authorize(principal, Capability.View);
  return template;
}

export async function createStepTemplate(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string } & StepTemplateInput,
): Promise<{ stepTemplateId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  checkRunModes(input.supportedRunModes);
  const propertiesRaw = input.propertiesRaw ?? '[]';
  parseTemplateProperties(propertiesRaw);
  const template: StepTemplate = {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    description: input.description ?? null,
    script: input.script,
    scriptLanguage: input.scriptLanguage,
    supportedRunModes: input.supportedRunModes ?? [...DEFAULT_RUN_MODES],
    propertiesRaw,
  };
  await withUniqueName('name', input.name, () => deps.store.stepTemplates.insert(template));
  return { stepTemplateId: template.id };
}

export async function updateStepTemplate(
  deps: DomainDeps,
  principal: Principal,
  input: { stepTemplateId: string } & Partial<StepTemplateInput>,
): Promise<void> {
  const template = await visibleResource(
    deps,
    principal,
    deps.store.stepTemplates.get(input.stepTemplateId),
    'stepTemplateId',
  );
  authorize(principal, Capability.ManageWorkspace);
  checkRunModes(input.supportedRunModes);
  if (input.propertiesRaw !== undefined) parseTemplateProperties(input.propertiesRaw);
  if (input.supportedRunModes !== undefined) {
    // A step set to a run mode the template no longer supports could not be deployed.
    const modes = input.supportedRunModes;
    const stranded = (await deps.store.projectSteps.listByTemplate(template.id)).filter(
      (s) => s.runMode !== null && !modes.includes(s.runMode),
    );
    if (stranded.length > 0) {
      const names = stranded.map((s) => `'${s.name}' (${s.runMode ?? ''})`).join(', ');
      throw new InvalidParameterError(`Steps still use a run mode that would be removed: ${names}`, [
        {
          property: 'supportedRunModes',
          messages: stranded.map((s) => `step '${s.name}' uses run mode '${s.runMode ?? ''}'`),
        },
      ]);
    }
  }
  await withUniqueName('name', input.name ?? template.name, () =>
    deps.store.stepTemplates.update(template.id, {
      name: input.name,
      description: input.description,
      script: input.script,
      scriptLanguage: input.scriptLanguage,
      supportedRunModes: input.supportedRunModes,
      propertiesRaw: input.propertiesRaw,
    }),
  );
}

/** Soft-deletes a template no live step uses; a deployment of such a step would have no script. */
export async function deleteStepTemplate(
  deps: DomainDeps,
  principal: Principal,
  stepTemplateId: string,
): Promise<void> {
  const template = await visibleResource(
    deps,
    principal,
    deps.store.stepTemplates.get(stepTemplateId),
    'stepTemplateId',
  );
  authorize(principal, Capability.ManageWorkspace);
  await deps.store.transaction(async (tx) => {
    // The row lock waits for a step being added with this template (it takes a share lock).
    if (!(await tx.stepTemplates.get(template.id, 'update'))) throw unknownId('stepTemplateId');
    const usage = await tx.stepTemplates.usedBy(template.id);
    if (usage.length > 0) {
      const users = usage.map((u) => `project '${u.projectName}' step '${u.stepName}'`);
      throw new InvalidParameterError(`Step template '${template.name}' is still used by ${users.join(', ')}`, [
        { property: 'stepTemplateId', messages: users.map((u) => `used by ${u}`) },
      ]);
    }
    await tx.stepTemplates.softDelete(template.id, deps.clock.now());
  });
}
