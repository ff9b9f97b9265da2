/**
 * The phase rules every lifecycle write shares (see lifecycles.ts for the list): drafting phases
 * from input, checking environment references, validating a phase list and saving one phase.
 */
import { InvalidParameterError, newId, unknownId } from '../core/index.ts';
import type { Store } from '../store/index.ts';
import {
  HowToTrigger,
  ProgressRequirement,
  ProgressRequirementErrorMode,
  type Phase,
  type PhaseFields,
} from '../store/index.ts';

export interface PhaseEnvironmentInput {
  environmentId: string;
  howToTrigger?: HowToTrigger | undefined;
  /** Approvals deployments to it need through this phase (issue #15); 0 or absent: none of its own. */
  requiredApprovals?: number | undefined;
}

export interface PhaseInput {
  name: string;
  description?: string | null | undefined;
  progressRequirement?: ProgressRequirement | undefined;
  progressRequirementErrorMode?: ProgressRequirementErrorMode | undefined;
  progressRequirementCount?: number | undefined;
  environments?: PhaseEnvironmentInput[] | undefined;
}

/** A phase as it will be stored; `environments` carry IDs only. */
export interface PhaseDraft extends PhaseFields {
  environments: Array<{ environmentId: string; howToTrigger: HowToTrigger; requiredApprovals?: number }>;
}

/** Names the offending property: `phases[2].name` for whole-lifecycle writes, `name` for phase writes. */
export type PropertyOf = (phaseId: string, field: string) => string;

export function invalid(property: string, message: string): InvalidParameterError {
  return new InvalidParameterError(message, [{ property, messages: [message] }]);
}

/** 0 unless the requirement counts environments; then it must be given (or kept) and validated later. */
export function countFor(requirement: ProgressRequirement, count: number | undefined): number {
  return requirement === ProgressRequirement.MinimumNumberToComplete ? (count ?? 0) : 0;
}

/** A phase environment's requiredApprovals as stored and read: present only when it requires some. */
export function approvalsOf(requiredApprovals: number | undefined): { requiredApprovals?: number } {
  return requiredApprovals ? { requiredApprovals } : {};
}

export function toDraft(lifecycleId: string, id: string, sortOrder: number, input: PhaseInput): PhaseDraft {
  const requirement = input.progressRequirement ?? ProgressRequirement.AllMustComplete;
  return {
    id,
    lifecycleId,
    name: input.name,
    description: input.description ?? null,
    sortOrder,
    progressRequirement: requirement,
    progressRequirementErrorMode:
      input.progressRequirementErrorMode ?? ProgressRequirementErrorMode.NoErrorsAllowWarnings,
    progressRequirementCount: countFor(requirement, input.progressRequirementCount),
    environments: (input.environments ?? []).map((e) => ({
      environmentId: e.environmentId,
      howToTrigger: e.howToTrigger ?? HowToTrigger.Manual,
      ...approvalsOf(e.requiredApprovals),
    })),
  };
}

export function fromStored(phase: Phase): PhaseDraft {
  return {
    ...phase,
    environments: phase.environments.map((e) => ({
      environmentId: e.environmentId,
      howToTrigger: e.howToTrigger,
      ...approvalsOf(e.requiredApprovals),
    })),
  };
}

/** Checks referenced environments are live environments of the workspace; else 400 naming the property. */
export async function requireEnvironments(
  deps: { store: Store },
  workspaceId: string,
  refs: ReadonlyArray<{ environmentId: string; property: string }>,
): Promise<void> {
  const found = await deps.store.environments.getMany(workspaceId, [...new Set(refs.map((r) => r.environmentId))]);
  const known = new Set(found.map((e) => e.id));
  const missing = refs.find((r) => !known.has(r.environmentId));
  if (missing) throw unknownId(missing.property);
}

/** Validates the whole phase list; the count rule only for `touched` phases (a deleted environment must not block unrelated edits). */
export function validatePhases(
  phases: readonly PhaseDraft[],
  touched: ReadonlySet<string>,
  propertyOf: PropertyOf,
): void {
  const names = new Map<string, string>();
  const environments = new Map<string, string>();
  for (const phase of phases) {
    const key = phase.name.toLowerCase();
    if (names.has(key))
      throw invalid(propertyOf(phase.id, 'name'), `A phase named '${phase.name}' already exists in this lifecycle`);
    names.set(key, phase.name);
    for (const e of phase.environments) {
      const other = environments.get(e.environmentId);
      if (other !== undefined) {
        throw invalid(
          propertyOf(phase.id, 'environments'),
          `Environment ${e.environmentId} is already in phase '${other}'; an environment appears at most once per lifecycle`,
        );
      }
      environments.set(e.environmentId, phase.name);
    }
    if (touched.has(phase.id) && phase.progressRequirement === ProgressRequirement.MinimumNumberToComplete) {
      const count = phase.progressRequirementCount;
      if (count < 1 || count > phase.environments.length) {
        throw invalid(
          propertyOf(phase.id, 'progressRequirementCount'),
          `progressRequirementCount must be between 1 and the number of environments in phase '${phase.name}' (${phase.environments.length}) when progressRequirement is MinimumNumberToComplete`,
        );
      }
    }
  }
}

/** Writes a phase with its environments (insert when new). */
export async function savePhase(tx: Store, phase: PhaseDraft, isNew: boolean): Promise<void> {
  const { environments, ...fields } = phase;
  if (isNew) await tx.lifecycles.insertPhase(fields);
  else await tx.lifecycles.updatePhase(fields);
  await tx.lifecycles.setPhaseEnvironments(phase.id, environments);
}

/** Drafts for a full phase list; `keepIds` are the phase IDs the caller may reuse (PUT keeps phase IDs stable). */
export async function draftPhaseList(
  deps: { store: Store },
  workspaceId: string,
  lifecycleId: string,
  inputs: ReadonlyArray<PhaseInput & { phaseId?: string | undefined }>,
  keepIds: ReadonlySet<string>,
): Promise<{ drafts: PhaseDraft[]; propertyOf: PropertyOf }> {
  const used = new Set<string>();
  const drafts = inputs.map((input, index) => {
    if (input.phaseId !== undefined && (!keepIds.has(input.phaseId) || used.has(input.phaseId)))
      throw unknownId(`phases[${index}].phaseId`);
    const id = input.phaseId ?? newId();
    used.add(id);
    return toDraft(lifecycleId, id, index + 1, input);
  });
  const indexOf = new Map(drafts.map((d, i) => [d.id, i]));
  const propertyOf: PropertyOf = (phaseId, field) => `phases[${indexOf.get(phaseId) ?? 0}].${field}`;
  const refs = drafts.flatMap((d) =>
    d.environments.map((e) => ({ environmentId: e.environmentId, property: propertyOf(d.id, 'environments') })),
  );
  await requireEnvironments(deps, workspaceId, refs);
  validatePhases(drafts, new Set(drafts.map((d) => d.id)), propertyOf);
  return { drafts, propertyOf };
}
