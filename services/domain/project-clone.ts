/**
 * Project clone (spec §4.12, contract §3): copies a project with its steps, rolling groups,
 * channels, variables (values and filters) and its script-module and workspace-variable imports
 * into a new project of the same workspace. Everything gets a new ID; references between the
 * copied parts point at the copies. One transaction, so a refused or failed clone leaves nothing.
 */
import { authorize, Capability, newId, unknownId, type Principal } from '../core/index.ts';
import { isForeignKeyViolation, type Store } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { withUniqueName } from './scope.ts';

/** Same rule as createProject: a role limited to some projects cannot create new ones. */
function authorizeCreateProject(principal: Principal): void {
  if (
    !principal.roles.some((r) => (r.role === Capability.EditProject && !r.projectIds) || r.role === Capability.Admin)
  ) {
    authorize(principal, Capability.EditProject, { projectId: '(new project)' });
  }
}

/** Copies groups, steps and channels; returns source ID → copy ID for every copied part. */
async function copyParts(tx: Store, sourceId: string, targetId: string): Promise<Map<string, string>> {
  const idMap = new Map<string, string>();
  const copyOf = (id: string) => {
    const copy = newId();
    idMap.set(id, copy);
    return copy;
  };
  // Groups first: steps reference them. Group membership lives on the steps, so it is remapped there.
  for (const group of await tx.rollingGroups.listByProject(sourceId)) {
    await tx.rollingGroups.insert({ ...group, id: copyOf(group.id), projectId: targetId });
  }
  const steps = await tx.projectSteps.listByProject(sourceId);
  for (const templateId of new Set(steps.map((s) => s.stepTemplateId))) {
    // The share lock keeps each template from being deleted before the copies are committed.
    if (!(await tx.stepTemplates.get(templateId, 'share'))) throw unknownId('projectId');
  }
  for (const step of steps) {
    const rollingGroupId = step.rollingGroupId === null ? null : (idMap.get(step.rollingGroupId) ?? null);
    await tx.projectSteps.insert({ ...step, id: copyOf(step.id), projectId: targetId, rollingGroupId });
  }
  for (const channel of await tx.channels.listByProject(sourceId)) {
    await tx.channels.insert({ ...channel, id: copyOf(channel.id), projectId: targetId });
  }
  return idMap;
}

export async function cloneProject(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; name: string },
): Promise<{ projectId: string }> {
  const source = await visibleProject(deps, principal, input.projectId);
  authorize(principal, [Capability.View, Capability.EditProject], { projectId: source.id });
  authorizeCreateProject(principal);
  const projectId = newId();
  try {
    await withUniqueName('name', input.name, () =>
      deps.store.transaction(async (tx) => {
        // Locks the source so no step, group or channel changes while it is being copied.
        if (!(await tx.projectSteps.lockProject(source.id))) throw unknownId('projectId');
        await tx.projects.insert({
          id: projectId,
          workspaceId: source.workspaceId,
          name: input.name,
          description: source.description,
          lifecycleId: source.lifecycleId,
        });
        const idMap = await copyParts(tx, source.id, projectId);
        await tx.variables.copyProjectVariables(source.id, projectId, idMap, deps.clock.now());
        const modules = await tx.scriptModules.importsOf(source.id);
        await tx.scriptModules.setImports(
          projectId,
          modules.map((m) => m.id),
        );
      }),
    );
  } catch (error) {
    // A lifecycle, module or variable the source references was deleted meanwhile.
    if (isForeignKeyViolation(error)) throw unknownId('projectId');
    throw error;
  }
  return { projectId };
}
