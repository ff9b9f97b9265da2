/**
 * Phase-level lifecycle edits (/api/lifecycle/phase…). Each runs in one transaction holding the
 * lifecycle's row lock, re-reads the phase list, applies the change in memory, validates the whole
 * list (lifecycle-rules.ts) and writes only what changed, so concurrent edits cannot break the
 * invariants (unique names, one appearance per environment, sortOrder 1..n).
 */
import { authorize, Capability, newId, unknownId, type Principal } from '../core/index.ts';
import type { Store } from '../store/index.ts';
import { HowToTrigger, type Lifecycle, type Phase } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import {
  approvalsOf,
  countFor,
  fromStored,
  invalid,
  requireEnvironments,
  savePhase,
  toDraft,
  validatePhases,
  type PhaseDraft,
  type PhaseInput,
  type PropertyOf,
} from './lifecycle-rules.ts';
import { visibleLifecycle } from './lifecycles.ts';
import { visibleResource, withUniqueName } from './scope.ts';

/** Phase endpoints name fields of the one phase they edit. */
const byField: PropertyOf = (_phaseId, field) => field;

async function currentPhases(tx: Store, lifecycleId: string): Promise<PhaseDraft[]> {
  await tx.lifecycles.lock(lifecycleId);
  return ((await tx.lifecycles.phasesOf([lifecycleId])).get(lifecycleId) ?? []).map(fromStored);
}

/** A phase whose lifecycle the principal may see, with that lifecycle; else 400 naming phaseId. */
async function visiblePhase(
  deps: DomainDeps,
  principal: Principal,
  phaseId: string,
): Promise<{ phase: Phase; lifecycle: Lifecycle }> {
  const phase = await deps.store.lifecycles.getPhase(phaseId);
  const lifecycle = await visibleResource(
    deps,
    principal,
    phase ? deps.store.lifecycles.get(phase.lifecycleId) : Promise.resolve(null),
    'phaseId',
  );
  if (!phase) throw unknownId('phaseId');
  return { phase, lifecycle };
}

/** Finds the phase again under the lock: a concurrent delete makes it unknown. */
function locate(phases: readonly PhaseDraft[], phaseId: string): { index: number; phase: PhaseDraft } {
  const index = phases.findIndex((p) => p.id === phaseId);
  const phase = phases[index];
  if (!phase) throw unknownId('phaseId');
  return { index, phase };
}

async function renumber(tx: Store, phases: readonly PhaseDraft[]): Promise<void> {
  await tx.lifecycles.renumberPhases(phases.map((p) => p.id));
}

/** Appends a phase (sortOrder = last + 1). */
export async function addPhase(
  deps: DomainDeps,
  principal: Principal,
  input: { lifecycleId: string } & PhaseInput,
): Promise<{ phaseId: string }> {
  const lifecycle = await visibleLifecycle(deps, principal, input.lifecycleId);
  const environmentIds = (input.environments ?? []).map((e) => e.environmentId);
  await requireEnvironments(
    deps,
    lifecycle.workspaceId,
    environmentIds.map((environmentId) => ({ environmentId, property: 'environments' })),
  );
  authorize(principal, Capability.ManageWorkspace, { environmentIds });
  const phaseId = newId();
  await withUniqueName('name', input.name, () =>
    deps.store.transaction(async (tx) => {
      const phases = await currentPhases(tx, lifecycle.id);
      const draft = toDraft(lifecycle.id, phaseId, phases.length + 1, input);
      validatePhases([...phases, draft], new Set([phaseId]), byField);
      await savePhase(tx, draft, true);
    }),
  );
  return { phaseId };
}

export interface PhaseUpdate extends Partial<PhaseInput> {
  phaseId: string;
  /** New position, 1..n; the other phases shift to keep the order contiguous. */
  sortOrder?: number | undefined;
}

/** Changes only the fields sent; `environments`, when sent, replaces the phase's list. */
export async function updatePhase(deps: DomainDeps, principal: Principal, input: PhaseUpdate): Promise<void> {
  const { lifecycle, phase: before } = await visiblePhase(deps, principal, input.phaseId);
  const given = input.environments;
  if (given)
    await requireEnvironments(
      deps,
      lifecycle.workspaceId,
      given.map((e) => ({ environmentId: e.environmentId, property: 'environments' })),
    );
  const touched = given
    ? [...before.environments.map((e) => e.environmentId), ...given.map((e) => e.environmentId)]
    : [];
  authorize(principal, Capability.ManageWorkspace, { environmentIds: [...new Set(touched)] });
  await withUniqueName('name', input.name ?? before.name, () =>
    deps.store.transaction(async (tx) => {
      const phases = await currentPhases(tx, lifecycle.id);
      const { index, phase } = locate(phases, input.phaseId);
      const requirement = input.progressRequirement ?? phase.progressRequirement;
      const next: PhaseDraft = {
        ...phase,
        name: input.name ?? phase.name,
        description: input.description !== undefined ? input.description : phase.description,
        progressRequirement: requirement,
        progressRequirementErrorMode: input.progressRequirementErrorMode ?? phase.progressRequirementErrorMode,
        progressRequirementCount: countFor(
          requirement,
          input.progressRequirementCount ?? phase.progressRequirementCount,
        ),
        environments: given
          ? given.map((e) => ({
              environmentId: e.environmentId,
              howToTrigger: e.howToTrigger ?? HowToTrigger.Manual,
              ...approvalsOf(e.requiredApprovals),
            }))
          : phase.environments,
      };
      const ordered = phases.filter((p) => p.id !== phase.id);
      const position = input.sortOrder ?? index + 1;
      if (!Number.isInteger(position) || position < 1 || position > phases.length) {
        throw invalid('sortOrder', `sortOrder must be between 1 and ${phases.length}`);
      }
      ordered.splice(position - 1, 0, next);
      validatePhases(ordered, new Set([phase.id]), byField);
      await savePhase(tx, { ...next, sortOrder: phase.sortOrder }, false);
      if (position !== index + 1) await renumber(tx, ordered);
    }),
  );
}

/** Removes a phase; the phases after it move up one place. */
export async function deletePhase(deps: DomainDeps, principal: Principal, phaseId: string): Promise<void> {
  const { lifecycle, phase } = await visiblePhase(deps, principal, phaseId);
  authorize(principal, Capability.ManageWorkspace, { environmentIds: phase.environments.map((e) => e.environmentId) });
  await deps.store.transaction(async (tx) => {
    const phases = await currentPhases(tx, lifecycle.id);
    locate(phases, phaseId);
    await tx.lifecycles.deletePhase(phaseId);
    await renumber(
      tx,
      phases.filter((p) => p.id !== phaseId),
    );
  });
}

/** Attaches an environment to a phase, or changes its trigger when already attached. */
export async function setPhaseEnvironment(
  deps: DomainDeps,
  principal: Principal,
  input: {
    phaseId: string;
    environmentId: string;
    howToTrigger?: HowToTrigger | undefined;
    /** Absent: kept as it is (none for a new one); 0 clears it. */
    requiredApprovals?: number | undefined;
  },
): Promise<void> {
  const { lifecycle } = await visiblePhase(deps, principal, input.phaseId);
  await requireEnvironments(deps, lifecycle.workspaceId, [
    { environmentId: input.environmentId, property: 'environmentId' },
  ]);
  authorize(principal, Capability.ManageWorkspace, { environmentIds: [input.environmentId] });
  await deps.store.transaction(async (tx) => {
    const phases = await currentPhases(tx, lifecycle.id);
    const { index, phase } = locate(phases, input.phaseId);
    const existing = phase.environments.find((e) => e.environmentId === input.environmentId);
    const environments = existing
      ? phase.environments.map((e) =>
          e === existing
            ? {
                environmentId: e.environmentId,
                howToTrigger: input.howToTrigger ?? e.howToTrigger,
                ...approvalsOf(input.requiredApprovals ?? e.requiredApprovals),
              }
            : e,
        )
      : [
          ...phase.environments,
          {
            environmentId: input.environmentId,
            howToTrigger: input.howToTrigger ?? HowToTrigger.Manual,
            ...approvalsOf(input.requiredApprovals),
          },
        ];
    const next = { ...phase, environments };
    validatePhases(
      phases.map((p, i) => (i === index ? next : p)),
      new Set([phase.id]),
      (_id, field) => (field === 'environments' ? 'environmentId' : field),
    );
    await savePhase(tx, next, false);
  });
}

/** Detaches an environment from a phase; 400 when it is not in the phase. */
export async function removePhaseEnvironment(
  deps: DomainDeps,
  principal: Principal,
  input: { phaseId: string; environmentId: string },
): Promise<void> {
  const { lifecycle } = await visiblePhase(deps, principal, input.phaseId);
  authorize(principal, Capability.ManageWorkspace, { environmentIds: [input.environmentId] });
  await deps.store.transaction(async (tx) => {
    const phases = await currentPhases(tx, lifecycle.id);
    const { index, phase } = locate(phases, input.phaseId);
    if (!phase.environments.some((e) => e.environmentId === input.environmentId)) {
      throw invalid('environmentId', `Environment ${input.environmentId} is not in phase '${phase.name}'`);
    }
    const next = { ...phase, environments: phase.environments.filter((e) => e.environmentId !== input.environmentId) };
    validatePhases(
      phases.map((p, i) => (i === index ? next : p)),
      new Set([phase.id]),
      byField,
    );
    await savePhase(tx, next, false);
  });
}
