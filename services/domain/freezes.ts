/**
 * Deployment freezes (issue #15), managed per workspace: while one holds, deploy and promote to
 * its environments answer 400 naming it (OverrideFreeze with a reason goes through), and
 * automatic or scheduled deployments that fall due wait Queued until it ends.
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
import type { DeploymentFreeze, FreezeRecurrence } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { checkTimeZone, MAX_RECURRENCE_MINUTES, parseCron } from './freeze-windows.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export interface FreezeInput {
  name?: string | undefined;
  description?: string | null | undefined;
  startUtc?: string | null | undefined;
  endUtc?: string | null | undefined;
  recurrence?: FreezeRecurrence | null | undefined;
  environmentIds?: string[] | undefined;
  projectIds?: string[] | undefined;
}

function invalid(property: string, message: string): InvalidParameterError {
  return new InvalidParameterError(message, [{ property, messages: [message] }]);
}

function dateOf(value: string | null | undefined, property: string): Date | null {
  if (value === null || value === undefined) return null;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw invalid(property, `${property} is not an ISO 8601 timestamp`);
  return date;
}

/** Checks the window and the references, and returns the freeze as it will be stored. */
async function validated(deps: DomainDeps, freeze: DeploymentFreeze): Promise<DeploymentFreeze> {
  if (freeze.recurrence) {
    if (freeze.startUtc || freeze.endUtc)
      throw invalid('recurrence', 'Give either startUtc and endUtc, or a recurrence, not both');
    try {
      parseCron(freeze.recurrence.cron);
    } catch (error) {
      throw invalid('recurrence.cron', (error as Error).message);
    }
    checkTimeZone(freeze.recurrence.timeZone);
    if (freeze.recurrence.durationMinutes < 1 || freeze.recurrence.durationMinutes > MAX_RECURRENCE_MINUTES)
      throw invalid('recurrence.durationMinutes', `durationMinutes must be between 1 and ${MAX_RECURRENCE_MINUTES}`);
  } else {
    if (!freeze.startUtc || !freeze.endUtc)
      throw invalid('startUtc', 'A freeze needs startUtc and endUtc, or a recurrence');
    if (freeze.endUtc <= freeze.startUtc) throw invalid('endUtc', 'endUtc must be after startUtc');
  }
  if (freeze.environmentIds.length === 0) throw invalid('environmentIds', 'A freeze covers at least one environment');
  const environments = await deps.store.environments.getMany(freeze.workspaceId, freeze.environmentIds);
  if (environments.length !== new Set(freeze.environmentIds).size) throw unknownId('environmentIds');
  for (const projectId of new Set(freeze.projectIds)) {
    const project = await deps.store.projects.get(projectId);
    if (project?.workspaceId !== freeze.workspaceId) throw unknownId('projectIds');
  }
  return {
    ...freeze,
    environmentIds: [...new Set(freeze.environmentIds)],
    projectIds: [...new Set(freeze.projectIds)],
  };
}

/** Queued deployments of the workspace pass the gate again now (and start if nothing holds them). */
async function regate(deps: DomainDeps, workspaceId: string): Promise<void> {
  const ids = await deps.store.deployments.gateQueuedInWorkspace(workspaceId, deps.clock.now());
  if (ids.length > 0) await deps.wakeDeployments?.(ids);
}

export async function createFreeze(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string; name: string; environmentIds: string[] } & FreezeInput,
): Promise<{ freezeId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace, { environmentIds: input.environmentIds });
  const freeze = await validated(deps, {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    description: input.description ?? null,
    startUtc: dateOf(input.startUtc, 'startUtc'),
    endUtc: dateOf(input.endUtc, 'endUtc'),
    recurrence: input.recurrence ?? null,
    environmentIds: input.environmentIds,
    projectIds: input.projectIds ?? [],
    createdUtc: deps.clock.now(),
  });
  await withUniqueName('name', freeze.name, () => deps.store.deploymentFreezes.insert(freeze));
  await regate(deps, workspace.id);
  return { freezeId: freeze.id };
}

async function visibleFreeze(deps: DomainDeps, principal: Principal, freezeId: string) {
  return visibleResource(deps, principal, deps.store.deploymentFreezes.get(freezeId), 'freezeId');
}

export async function getFreeze(deps: DomainDeps, principal: Principal, freezeId: string): Promise<DeploymentFreeze> {
  const freeze = await visibleFreeze(deps, principal, freezeId);
  authorize(principal, Capability.View);
  return freeze;
}

export async function updateFreeze(
  deps: DomainDeps,
  principal: Principal,
  input: { freezeId: string } & FreezeInput,
): Promise<void> {
  const current = await visibleFreeze(deps, principal, input.freezeId);
  authorize(principal, Capability.ManageWorkspace, {
    environmentIds: [...current.environmentIds, ...(input.environmentIds ?? [])],
  });
  // A window given replaces a recurrence and the other way round.
  const windowGiven = input.startUtc !== undefined || input.endUtc !== undefined;
  const freeze = await validated(deps, {
    ...current,
    name: input.name ?? current.name,
    description: input.description === undefined ? current.description : input.description,
    startUtc:
      input.startUtc !== undefined ? dateOf(input.startUtc, 'startUtc') : input.recurrence ? null : current.startUtc,
    endUtc: input.endUtc !== undefined ? dateOf(input.endUtc, 'endUtc') : input.recurrence ? null : current.endUtc,
    recurrence: input.recurrence !== undefined ? input.recurrence : windowGiven ? null : current.recurrence,
    environmentIds: input.environmentIds ?? current.environmentIds,
    projectIds: input.projectIds ?? current.projectIds,
  });
  await withUniqueName('name', freeze.name, () => deps.store.deploymentFreezes.update(freeze));
  await regate(deps, freeze.workspaceId);
}

export async function deleteFreeze(deps: DomainDeps, principal: Principal, freezeId: string): Promise<void> {
  const freeze = await visibleFreeze(deps, principal, freezeId);
  authorize(principal, Capability.ManageWorkspace, { environmentIds: freeze.environmentIds });
  await deps.store.deploymentFreezes.softDelete(freeze.id, deps.clock.now());
  await regate(deps, freeze.workspaceId);
}

export async function listFreezes(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<DeploymentFreeze>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  return deps.store.deploymentFreezes.list(workspace.id, toPage(query));
}
