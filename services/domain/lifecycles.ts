/**
 * Lifecycles (spec §2.4, §4.8, §4.9): ordered phases of environments that a release moves through.
 * Rules kept here: phase names unique per lifecycle; an environment appears at most once per
 * lifecycle (availability is derived per phase, so a second appearance would be ambiguous);
 * sortOrder is always 1..n; progressRequirementCount is 1..(environments in the phase) with
 * MinimumNumberToComplete and 0 otherwise. Every phase edit runs under a lock on the lifecycle row.
 * Phase-level endpoints live in lifecycle-phases.ts; the shared rules in lifecycle-rules.ts.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  toPage,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import {
  HowToTrigger,
  ProgressRequirement,
  ProgressRequirementErrorMode,
  type Lifecycle,
  type Phase,
} from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { approvalsOf, draftPhaseList, savePhase, type PhaseInput } from './lifecycle-rules.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export { HowToTrigger, ProgressRequirement, ProgressRequirementErrorMode };
export type { PhaseInput, PhaseEnvironmentInput } from './lifecycle-rules.ts';

/** The read shape of spec §2.4; releases freeze exactly this in their snapshot. */
export interface LifecycleReadModel {
  lifecycleId: string;
  workspaceId: string;
  name: string;
  description: string | null;
  phases: PhaseReadModel[];
}

export interface PhaseReadModel {
  phaseId: string;
  name: string;
  description: string | null;
  sortOrder: number;
  progressRequirement: ProgressRequirement;
  progressRequirementErrorMode: ProgressRequirementErrorMode;
  progressRequirementCount: number;
  /** requiredApprovals (issue #15) only where a phase environment requires approvals. */
  environments: Array<{
    environmentId: string;
    environmentName: string;
    howToTrigger: HowToTrigger;
    requiredApprovals?: number;
  }>;
}

/** A lifecycle and its phases as the API shows them (a release snapshot freezes this too). */
export function lifecycleReadModel(lifecycle: Lifecycle, phases: readonly Phase[]): LifecycleReadModel {
  return {
    lifecycleId: lifecycle.id,
    workspaceId: lifecycle.workspaceId,
    name: lifecycle.name,
    description: lifecycle.description,
    phases: phases.map((p) => ({
      phaseId: p.id,
      name: p.name,
      description: p.description,
      sortOrder: p.sortOrder,
      progressRequirement: p.progressRequirement,
      progressRequirementErrorMode: p.progressRequirementErrorMode,
      progressRequirementCount: p.progressRequirementCount,
      environments: p.environments.map((e) => ({
        environmentId: e.environmentId,
        environmentName: e.environmentName,
        howToTrigger: e.howToTrigger,
        ...approvalsOf(e.requiredApprovals),
      })),
    })),
  };
}

export async function visibleLifecycle(
  deps: DomainDeps,
  principal: Principal,
  lifecycleId: string,
): Promise<Lifecycle> {
  return visibleResource(deps, principal, deps.store.lifecycles.get(lifecycleId), 'lifecycleId');
}

export async function listLifecycles(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<LifecycleReadModel>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const page = await deps.store.lifecycles.list(workspace.id, toPage(query));
  const phases = await deps.store.lifecycles.phasesOf(page.items.map((l) => l.id));
  return { items: page.items.map((l) => lifecycleReadModel(l, phases.get(l.id) ?? [])), totalCount: page.totalCount };
}

/** Spec §7.3: reading one lifecycle needs permission to manage lifecycles. */
export async function getLifecycle(
  deps: DomainDeps,
  principal: Principal,
  lifecycleId: string,
): Promise<LifecycleReadModel> {
  const lifecycle = await visibleLifecycle(deps, principal, lifecycleId);
  authorize(principal, Capability.ManageWorkspace);
  const phases = (await deps.store.lifecycles.phasesOf([lifecycle.id])).get(lifecycle.id) ?? [];
  return lifecycleReadModel(lifecycle, phases);
}

export async function createLifecycle(
  deps: DomainDeps,
  principal: Principal,
  input: {
    workspaceId: string;
    name: string;
    description?: string | null | undefined;
    phases?: PhaseInput[] | undefined;
  },
): Promise<{ lifecycleId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  const lifecycleId = newId();
  const { drafts } = await draftPhaseList(deps, workspace.id, lifecycleId, input.phases ?? [], new Set());
  authorize(principal, Capability.ManageWorkspace, {
    environmentIds: drafts.flatMap((d) => d.environments.map((e) => e.environmentId)),
  });
  await withUniqueName('name', input.name, () =>
    deps.store.transaction(async (tx) => {
      await tx.lifecycles.insert({
        id: lifecycleId,
        workspaceId: workspace.id,
        name: input.name,
        description: input.description ?? null,
      });
      for (const draft of drafts) await savePhase(tx, draft, true);
    }),
  );
  return { lifecycleId };
}

export async function updateLifecycle(
  deps: DomainDeps,
  principal: Principal,
  input: {
    lifecycleId: string;
    name?: string | undefined;
    description?: string | null | undefined;
    phases?: Array<PhaseInput & { phaseId?: string | undefined }> | undefined;
  },
): Promise<void> {
  const lifecycle = await visibleLifecycle(deps, principal, input.lifecycleId);
  authorize(principal, Capability.ManageWorkspace);
  const phases = input.phases;
  await withUniqueName('name', input.name ?? lifecycle.name, () =>
    deps.store.transaction(async (tx) => {
      await tx.lifecycles.lock(lifecycle.id);
      await tx.lifecycles.update(lifecycle.id, { name: input.name, description: input.description });
      if (phases === undefined) return;
      const current = (await tx.lifecycles.phasesOf([lifecycle.id])).get(lifecycle.id) ?? [];
      const { drafts } = await draftPhaseList(
        { ...deps, store: tx },
        lifecycle.workspaceId,
        lifecycle.id,
        phases,
        new Set(current.map((p) => p.id)),
      );
      // Replacing the list touches every environment that leaves or joins it.
      const touched = [...current.flatMap((p) => p.environments), ...drafts.flatMap((d) => d.environments)].map(
        (e) => e.environmentId,
      );
      authorize(principal, Capability.ManageWorkspace, { environmentIds: [...new Set(touched)] });
      await tx.lifecycles.deletePhases(lifecycle.id);
      for (const draft of drafts) await savePhase(tx, draft, true);
    }),
  );
}

export async function deleteLifecycle(deps: DomainDeps, principal: Principal, lifecycleId: string): Promise<void> {
  const lifecycle = await visibleLifecycle(deps, principal, lifecycleId);
  authorize(principal, Capability.ManageWorkspace);
  await deps.store.transaction(async (tx) => {
    await tx.lifecycles.lock(lifecycle.id);
    const usage = await tx.lifecycles.usedBy(lifecycle.id);
    if (usage.projects.length > 0 || usage.channels.length > 0) {
      const users = [...usage.projects.map((n) => `project '${n}'`), ...usage.channels.map((n) => `channel '${n}'`)];
      throw new InvalidParameterError(`Lifecycle '${lifecycle.name}' is still used by ${users.join(', ')}`, [
        { property: 'lifecycleId', messages: ['in use'] },
      ]);
    }
    await tx.lifecycles.delete(lifecycle.id);
  });
}
